"""The global data layer on the cluster: values in Cassandra, reached through the host agent.

A grain has neither credentials for Cassandra nor a route to it, and its process lives
for one event, too short for a driver session. So it asks its host agent over the local
bus, on keys only its own application may touch (decision 0012):

1. LPUSH a :class:`~sand_contracts.ttypes.DataRequest` (Thrift compact) to
   ``sand:gdata:<app>:requests``; the app's Redis ACL user alone may write there, so the
   agent takes the app from the key, never from the request;
2. BRPOP ``sand:gdata:<app>:reply:<request id>``, which only this app may read, for the
   :class:`~sand_contracts.ttypes.DataReply`, up to ``GDATA_TIMEOUT_MS``.

Both commands go in one pipeline: one round trip from the grain's side. A timeout, a
Redis failure or a Cassandra failure the agent reports becomes a
:class:`~sand.data.DataStoreError` naming the operation, the key and the cause.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any

from sand_contracts.ttypes import DataOp, DataReply, DataRequest
from thrift.protocol import TCompactProtocol
from thrift.TSerialization import deserialize, serialize

from sand import keys as sand_keys
from sand.contracts import GDATA_TIMEOUT_MS
from sand.data import DataStoreError, check_value_size
from sand.localbus import BusError

# The C-accelerated compact protocol when the thrift wheel has it; the same bytes as the pure one.
_PROTOCOL = TCompactProtocol.TCompactProtocolAcceleratedFactory()


class AgentDataStore:
    """A :class:`~sand.data.DataStore` for ``app``'s global scope, served by the host agent.

    ``redis_client`` is the grain process's :class:`~sand.localbus.LocalBus`,
    logged in as the app's ACL user. Blocking: each call waits for the agent's reply, at
    most ``timeout_s``. Fork-safe as far as the client is. After a timeout the outcome of a
    put or delete is unknown: the agent may have carried it out late (it drops requests
    whose deadline passed before it took them, not those it was already carrying out).
    """

    def __init__(
        self,
        redis_client: Any,
        app: str,
        *,
        timeout_s: float = GDATA_TIMEOUT_MS / 1000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._redis = redis_client
        self._app = app
        self._requests = sand_keys.data_requests_key(app)
        self._timeout_s = timeout_s
        self._clock = clock

    def get(self, key: str) -> bytes | None:
        reply = self._call(DataOp.GET, "get", key)
        return None if reply.value is None else bytes(reply.value)

    def put(self, key: str, value: bytes) -> None:
        check_value_size(key, value, "global")
        self._call(DataOp.PUT, "put", key, bytes(value))

    def delete(self, key: str) -> bool:
        return bool(self._call(DataOp.DELETE, "delete", key).existed)

    def keys(self, prefix: str = "") -> list[str]:
        return list(self._call(DataOp.KEYS, "keys", prefix).keys or [])

    def _call(self, op: int, name: str, key: str, value: bytes | None = None) -> DataReply:
        request_id = secrets.token_hex(8)
        request = DataRequest(
            request_id=request_id,
            op=op,
            key=key,
            value=value,
            deadline_ms=int((self._clock() + self._timeout_s) * 1000),
        )
        pipe = self._redis.pipeline(transaction=False)
        pipe.lpush(self._requests, serialize(request, _PROTOCOL))
        pipe.brpop([sand_keys.data_reply_key(self._app, request_id)], timeout=self._timeout_s)
        try:
            _, popped = pipe.execute()
        except BusError as exc:
            raise self._error(name, key, f"the local bus failed: {exc}") from exc
        if popped is None:
            raise self._error(
                name,
                key,
                f"no reply from the host agent within {self._timeout_s:g} s "
                "(the agent or Cassandra is away or overloaded; a put or delete may or may "
                "not have been carried out)",
            )
        reply: DataReply = deserialize(DataReply(), popped[1], _PROTOCOL)
        if not reply.ok:
            raise self._error(name, key, reply.error or "the host agent refused it")
        return reply

    def _error(self, op: str, key: str, why: str) -> DataStoreError:
        return DataStoreError(f"data layer (global, app '{self._app}'): {op} {key!r} failed: {why}")
