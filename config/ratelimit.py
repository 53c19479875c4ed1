"""A small fixed-window rate limiter on Django's cache (Redis when configured, local memory otherwise)."""

from __future__ import annotations

import hashlib
import time
import unicodedata
from functools import wraps

from django.conf import settings
from django.core.cache import cache
from django.shortcuts import render


def parse_rate(rate: str) -> tuple[int, int]:
    """'10/60' -> (10 requests, 60 seconds)."""
    count, _, seconds = rate.partition("/")
    return int(count), int(seconds or 60)


def _redis_count(key: str, window: int, incr: bool = True):
    """Count one request in Redis in one round trip (the cache's key, so ``cache.get`` reads it);
    None when the cache is not Redis."""
    client_of = getattr(getattr(cache, "_cache", None), "get_client", None)
    if client_of is None or not hasattr(cache, "make_and_validate_key"):
        return None
    key = cache.make_and_validate_key(key)
    pipe = client_of(key, write=True).pipeline(transaction=True)
    # SET NX starts the window's count (and its expiry) only if it is not there yet; INCR counts.
    pipe.set(key, 0, nx=True, ex=window + 1)
    pipe.incr(key, 1 if incr else 0)
    return pipe.execute()[1]


def hit_limit(bucket: str, rate: str) -> bool:
    """Count one request in the bucket's current window; True when the limit is exceeded."""
    limit, window = parse_rate(rate)
    if limit <= 0:
        return False
    key = f"ratelimit:{bucket}:{int(time.time() // window)}"
    count = _redis_count(key, window)
    if count is not None:
        return count > limit
    if cache.add(key, 1, timeout=window + 1):
        return False
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=window + 1)
        return False
    return count > limit


def limit_reached(bucket: str, rate: str) -> bool:
    """Whether the bucket's current window is already full, without counting a request."""
    limit, window = parse_rate(rate)
    if limit <= 0:
        return False
    key = f"ratelimit:{bucket}:{int(time.time() // window)}"
    count = _redis_count(key, window, incr=False)
    if count is None:
        count = cache.get(key, 0)
    return count >= limit


def client_ip(request) -> str:
    return request.META.get("REMOTE_ADDR", "unknown")


def rate_limited(setting: str, key):
    """Refuse POSTs past ``settings.<setting>`` (e.g. '10/60') per key(request) with a 429 page."""

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if request.method == "POST" and hit_limit(f"{setting}:{key(request)}", getattr(settings, setting)):
                return render(request, "429.html", status=429)
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


# --- logins ------------------------------------------------------------------------------------
#
# Every way in (the login page, /api/token/, the admin's login) shares two limits:
# - LOGIN_RATE_LIMIT counts every attempt on one account, whatever the address, keyed on the user
#   name as the login form reads it (stripped; NFKC and case folded, so "rita", " Rita " and
#   "ｒｉｔａ" are one account's attempts): padding a name with spaces no longer buys fresh tries;
# - LOGIN_ADDRESS_RATE_LIMIT counts failed attempts from one client address, whatever the names
#   (spraying many accounts); successful logins do not count, so a class behind one address can
#   sign in together.
# Counts live in the cache: Redis when configured, so all web processes share them.


def normalised_username(value) -> str:
    return unicodedata.normalize("NFKC", str(value or "")).strip().casefold()[:150]


def _account_bucket(username) -> str:
    # Hashed: any user name makes a valid cache key.
    return "LOGIN_RATE_LIMIT:" + hashlib.sha256(normalised_username(username).encode("utf-8", "replace")).hexdigest()[:32]


def _address_bucket(request) -> str:
    return f"LOGIN_ADDRESS_RATE_LIMIT:{client_ip(request)}"


def login_refused(request, username) -> bool:
    """Count a login attempt; True when it must be refused (429) before checking the password."""
    if limit_reached(_address_bucket(request), settings.LOGIN_ADDRESS_RATE_LIMIT):
        return True
    return hit_limit(_account_bucket(username), settings.LOGIN_RATE_LIMIT)


def login_failed(request) -> None:
    """Count a failed login against the client's address."""
    hit_limit(_address_bucket(request), settings.LOGIN_ADDRESS_RATE_LIMIT)


def login_limited(view):
    """Apply the login limits to an HTML login view (success is a redirect; a failure shows the form again)."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if request.method != "POST":
            return view(request, *args, **kwargs)
        if login_refused(request, request.POST.get("username", "")):
            return render(request, "429.html", status=429)
        response = view(request, *args, **kwargs)
        if response.status_code != 302:
            login_failed(request)
        return response

    return wrapped
