"""A small fixed-window rate limiter on Django's cache (Redis when configured, local memory otherwise)."""

from __future__ import annotations

import time
from functools import wraps

from django.conf import settings
from django.core.cache import cache
from django.shortcuts import render


def parse_rate(rate: str) -> tuple[int, int]:
    """'10/60' -> (10 requests, 60 seconds)."""
    count, _, seconds = rate.partition("/")
    return int(count), int(seconds or 60)


def _redis_count(key: str, window: int):
    """Count one request in Redis in one round trip (the cache's key, so ``cache.get`` reads it);
    None when the cache is not Redis."""
    client_of = getattr(getattr(cache, "_cache", None), "get_client", None)
    if client_of is None or not hasattr(cache, "make_and_validate_key"):
        return None
    key = cache.make_and_validate_key(key)
    pipe = client_of(key, write=True).pipeline(transaction=True)
    # SET NX starts the window's count (and its expiry) only if it is not there yet; INCR counts.
    pipe.set(key, 0, nx=True, ex=window + 1)
    pipe.incr(key)
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
