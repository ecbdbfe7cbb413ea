"""The local data layer of a host: values in the host's Redis.

Keys come from :mod:`sand.keys` (``sand:data:<app>:<scope>:<key>``). Redis
exceptions are translated into :class:`~sand.data.DataStoreError` here, at the
adapter boundary.
"""

from __future__ import annotations

import re
from typing import Any

from sand import keys as sand_keys
from sand.data import DataStoreError, Scope, check_scope
from sand.localbus import BusError

_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")


class RedisDataStore:
    """A :class:`~sand.data.DataStore` for ``app`` in ``scope`` on one Redis.

    ``redis_client`` is the worker's :class:`~sand.localbus.LocalBus`. On the cluster
    the local scope lives here; the global scope lives in Cassandra
    (:class:`sand.data.agent.AgentDataStore`). Blocking; fork-safe (a forked child's
    client opens a connection of its own).
    """

    def __init__(self, redis_client: Any, app: str, scope: Scope = "local") -> None:
        self._redis = redis_client
        self._app = app
        self._scope = check_scope(scope)
        self._prefix = sand_keys.data_prefix(app, scope)

    def get(self, key: str) -> bytes | None:
        value = self._run("get", key, lambda: self._redis.get(self._key(key)))
        return None if value is None else bytes(value)

    def put(self, key: str, value: bytes) -> None:
        self._run("put", key, lambda: self._redis.set(self._key(key), bytes(value)))

    def delete(self, key: str) -> bool:
        return bool(self._run("delete", key, lambda: self._redis.delete(self._key(key))))

    def keys(self, prefix: str = "") -> list[str]:
        pattern = _GLOB_SPECIAL.sub(r"\\\1", self._prefix + prefix) + "*"

        def scan() -> list[str]:
            found = []
            for raw in self._redis.scan_iter(match=pattern, count=500):
                name = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
                found.append(name[len(self._prefix) :])
            return sorted(found)

        result: list[str] = self._run("keys", prefix, scan)
        return result

    def _key(self, key: str) -> str:
        return sand_keys.data_key(self._app, self._scope, key)

    def _run(self, op: str, key: str, call: Any) -> Any:
        try:
            return call()
        except BusError as exc:
            raise DataStoreError(
                f"data layer ({self._scope}, app '{self._app}'): {op} {key!r} failed: {exc}"
            ) from exc
