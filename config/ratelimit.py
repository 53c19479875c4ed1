"""A small sliding-window rate limiter on Django's cache (Redis when configured, local memory otherwise).

Each bucket keeps the times of its requests of the last window: a limit of 10/60 admits at most 10
requests in any 60 seconds, also across the clock's minute (a fixed window let 2 x 10 through there).
Refused requests are not counted, so a client that keeps knocking is admitted again as its old requests
leave the window."""

from __future__ import annotations

import hashlib
import secrets
import threading
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


# The log of a bucket: a sorted set (Redis) or a dict (other caches) of member -> time of its last request.
# A member is one request (a fresh name) or, for a distinct-count bucket, one client address.
_SLIDING_LOG = """
local key, now, window, limit, member, count = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local known = redis.call('ZSCORE', key, member)
local n = redis.call('ZCARD', key)
if count == '0' then return n end
if (not known) and n >= limit then return -1 end
redis.call('ZADD', key, now, member)
redis.call('EXPIRE', key, math.ceil(window) + 1)
return n
"""


def _redis_log(key: str, window: int, limit: int, member: str, count: bool):
    """Run the sliding-window step in Redis atomically (one Lua script); None when the cache is not Redis."""
    client_of = getattr(getattr(cache, "_cache", None), "get_client", None)
    if client_of is None or not hasattr(cache, "make_and_validate_key"):
        return None
    key = cache.make_and_validate_key(key)
    return int(client_of(key, write=True).eval(_SLIDING_LOG, 1, key, repr(time.time()), window, limit, member, "1" if count else "0"))


_LOCAL_LOG_LOCK = threading.Lock()


def _local_log(key: str, window: int, limit: int, member: str, count: bool) -> int:
    """The same step on another cache backend (local memory: one process, which is what it serves), under
    a lock so that the process's threads read and write a bucket one at a time."""
    with _LOCAL_LOG_LOCK:
        return _local_step(key, window, limit, member, count)


def _local_step(key: str, window: int, limit: int, member: str, count: bool) -> int:
    now = time.time()
    log = {m: t for m, t in (cache.get(key) or {}).items() if t > now - window}
    n = len(log)
    if not count:
        return n
    if member not in log and n >= limit:
        return -1
    log[member] = now
    cache.set(key, log, timeout=window + 1)
    return n


def _sliding(bucket: str, rate: str, member: str | None, count: bool) -> int | None:
    limit, window = parse_rate(rate)
    if limit <= 0:
        return None
    key = f"ratelimit:{bucket}"
    member = member if member is not None else f"{time.time()!r}:{secrets.token_hex(4)}"
    found = _redis_log(key, window, limit, member, count)
    return _local_log(key, window, limit, member, count) if found is None else found


def hit_limit(bucket: str, rate: str, member: str | None = None) -> bool:
    """Count one request in the bucket; True (and not counted) when ``rate`` requests were already counted
    in the last window (a sliding window: no burst across a boundary).  With ``member``, the bucket counts
    distinct members (e.g. client addresses): a member already counted is never refused by it."""
    return _sliding(bucket, rate, member, True) == -1


def limit_reached(bucket: str, rate: str) -> bool:
    """Whether the bucket's last window is already full, without counting a request."""
    limit, _ = parse_rate(rate)
    n = _sliding(bucket, rate, None, False)
    return n is not None and n >= limit


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
# Every way in (the login page, /api/token/, the admin's login) shares these limits, all sliding windows:
# - LOGIN_RATE_LIMIT counts attempts on one account from one client address, keyed on the user name as
#   the login form reads it (stripped; NFKC and case folded, so "rita", " Rita " and "ｒｉｔａ" are one
#   account's attempts) and the address.  A stranger guessing at an account from their address is
#   stopped there, and only there: the account's owner coming from another address is not locked out;
# - LOGIN_ACCOUNT_ADDRESSES_LIMIT counts the distinct addresses that FAILED to sign in to one account
#   (guessing spread over many addresses).  It is checked only after the password: the right password
#   gets in from any address, so a stranger filling it (IPv6 addresses are cheap) cannot lock the owner
#   out.  Past it, a wrong password from an address not yet counted (and not one the account signed in
#   from, remembered KNOWN_ADDRESS_DAYS) is answered with a 429 instead of the login form: it tells
#   whoever mistyped that the account is being guessed at, and reveals nothing more than a wrong
#   password does.  What bounds guessing is the two other limits;
# - LOGIN_ADDRESS_RATE_LIMIT counts failed attempts from one client address on one account (issue 39:
#   it counted every name, so one person behind a shared lab or campus address locked out everyone
#   there, the right password included).  Past it only that account is refused from that address;
#   another account's owner behind the same address signs in.  Successful logins never count.
# Counts live in the cache: Redis when configured, so all web processes share them.

KNOWN_ADDRESS_DAYS = 90


def normalised_username(value) -> str:
    return unicodedata.normalize("NFKC", str(value or "")).strip().casefold()[:150]


def _account(username) -> str:
    # Hashed: any user name makes a valid cache key.
    return hashlib.sha256(normalised_username(username).encode("utf-8", "replace")).hexdigest()[:32]


def _address_bucket(request, username) -> str:
    return f"LOGIN_ADDRESS_RATE_LIMIT:{client_ip(request)}:{_account(username)}"


def _known_key(request, username) -> str:
    return f"login-known:{_account(username)}:{hashlib.sha256(client_ip(request).encode()).hexdigest()[:16]}"


def login_refused(request, username) -> bool:
    """Count a login attempt; True when it must be refused (429) before checking the password."""
    if limit_reached(_address_bucket(request, username), settings.LOGIN_ADDRESS_RATE_LIMIT):
        return True
    return hit_limit(f"LOGIN_RATE_LIMIT:{_account(username)}:{client_ip(request)}", settings.LOGIN_RATE_LIMIT)


def login_failed(request, username=None) -> bool:
    """Count a failed login against the client's address on this account (``username`` None: a request
    naming none) and the addresses failing on the account; True when the answer should be a 429: the
    account's many-addresses limit is full and this address is new to it."""
    hit_limit(_address_bucket(request, username), settings.LOGIN_ADDRESS_RATE_LIMIT)
    if username is None or cache.get(_known_key(request, username)):
        return False
    bucket = f"LOGIN_ACCOUNT_ADDRESSES_LIMIT:{_account(username)}"
    return hit_limit(bucket, settings.LOGIN_ACCOUNT_ADDRESSES_LIMIT, member=client_ip(request))


def login_succeeded(request, username) -> None:
    """Remember the address as one the account signs in from: the many-addresses limit never holds it."""
    cache.set(_known_key(request, username), 1, timeout=KNOWN_ADDRESS_DAYS * 86400)


def login_limited(view):
    """Apply the login limits to an HTML login view (success is a redirect; a failure shows the form again)."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if request.method != "POST":
            return view(request, *args, **kwargs)
        username = request.POST.get("username", "")
        if login_refused(request, username):
            return render(request, "429.html", status=429)
        response = view(request, *args, **kwargs)
        if response.status_code != 302:
            if login_failed(request, username):
                return render(request, "429.html", status=429)
        else:
            login_succeeded(request, username)
        return response

    return wrapped
