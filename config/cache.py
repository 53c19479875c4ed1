"""Django's Redis cache with one reused client per connection pool.

Django's ``RedisCacheClient.get_client`` builds a new ``redis.Redis`` object on
every cache call; constructing one (its response-callback tables) costs more
CPU than the round trip itself, and the worker hot path makes about five cache
calls per cycle (sessions, rate limits).  A ``redis.Redis`` object is
thread-safe (connections come from its pool), so one per pool is enough.
"""

from __future__ import annotations

from django.core.cache.backends.redis import RedisCache, RedisCacheClient


class PooledRedisCacheClient(RedisCacheClient):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients = {}

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client


class PooledRedisCache(RedisCache):
    """``django.core.cache.backends.redis.RedisCache`` using :class:`PooledRedisCacheClient`."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = PooledRedisCacheClient
