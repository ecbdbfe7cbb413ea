"""The workflow engine's ExecutionStore on the local Redis, one Lua script per method.

Each group is one hash ``sand:join:{app}:{group}`` with fields ``size``,
``parent``, ``status`` (open/completed/closed), ``cursor``, ``filled`` and one
``s:{index}`` per recorded slot. A script runs atomically in Redis, which gives
the per-group atomicity the Protocol in ``sand_workflows.store`` demands.
"""

from __future__ import annotations

from collections.abc import Sequence

from sand.contracts import GROUP_TTL_S
from sand.keys import join_key
from sand.localbus import LocalBus
from sand_workflows.store import Claim, RecordOutcome

_OPEN = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'size', ARGV[1], 'parent', ARGV[2], 'status', 'open',
             'cursor', 0, 'filled', 0)
  redis.call('EXPIRE', KEYS[1], ARGV[3])
end
return 1
"""

_RECORD = """
local g = redis.call('HMGET', KEYS[1], 'status', 'size')
local index = tonumber(ARGV[1])
local size = tonumber(g[2])
if g[1] ~= 'open' or index < 0 or index >= size then return {0} end
if redis.call('HSETNX', KEYS[1], 's:' .. index, ARGV[2]) == 0 then return {0} end
local filled = redis.call('HINCRBY', KEYS[1], 'filled', 1)
if filled < size then return {1} end
redis.call('HSET', KEYS[1], 'status', 'completed')
local out = {1, 1, redis.call('HGET', KEYS[1], 'parent')}
for i = 0, size - 1 do out[#out + 1] = redis.call('HGET', KEYS[1], 's:' .. i) end
return out
"""

_CLOSE = """
if redis.call('HGET', KEYS[1], 'status') ~= 'open' then return false end
redis.call('HSET', KEYS[1], 'status', 'closed')
return redis.call('HGET', KEYS[1], 'parent')
"""

_CLAIM = """
local g = redis.call('HMGET', KEYS[1], 'status', 'size', 'cursor', 'parent')
if g[1] ~= 'open' then return false end
local size, cursor = tonumber(g[2]), tonumber(g[3])
local stop = math.min(size, cursor + math.max(tonumber(ARGV[1]), 0))
redis.call('HSET', KEYS[1], 'cursor', stop)
return {g[4], cursor, stop}
"""

_IS_OPEN = """
for i = 1, #KEYS do
  if redis.call('HGET', KEYS[i], 'status') ~= 'open' then return 0 end
end
return 1
"""

_KNOWN = """
return redis.call('EXISTS', unpack(KEYS))
"""


class RedisExecutionStore:
    """``sand_workflows.store.ExecutionStore`` for one application, on the local bus."""

    def __init__(self, client: LocalBus, app: str) -> None:
        self._client = client
        self._app = app
        self._open = client.register_script(_OPEN)
        self._record = client.register_script(_RECORD)
        self._close = client.register_script(_CLOSE)
        self._claim = client.register_script(_CLAIM)
        self._is_open = client.register_script(_IS_OPEN)
        self._known = client.register_script(_KNOWN)

    def _key(self, group_id: str) -> str:
        return join_key(self._app, group_id)

    def open_group(self, group_id: str, size: int, parent: str) -> None:
        self._open(keys=[self._key(group_id)], args=[size, parent, GROUP_TTL_S])

    def record_result(self, group_id: str, index: int, value: str) -> RecordOutcome:
        reply = self._record(keys=[self._key(group_id)], args=[index, value])
        if not reply or int(reply[0]) == 0:
            return RecordOutcome(accepted=False)
        if len(reply) == 1:
            return RecordOutcome(accepted=True)
        parent = _text(reply[2])
        return RecordOutcome(True, True, tuple(_text(v) for v in reply[3:]), parent)

    def close_group(self, group_id: str) -> str | None:
        reply = self._close(keys=[self._key(group_id)])
        return None if reply is None else _text(reply)

    def claim_items(self, group_id: str, count: int) -> Claim | None:
        reply = self._claim(keys=[self._key(group_id)], args=[count])
        if reply is None:
            return None
        parent, start, stop = _text(reply[0]), int(reply[1]), int(reply[2])
        return Claim(tuple(range(start, stop)), parent)

    def is_open(self, group_ids: Sequence[str]) -> bool:
        if not group_ids:
            return True
        return bool(self._is_open(keys=[self._key(g) for g in group_ids]))

    def known(self, group_ids: Sequence[str]) -> bool:
        if not group_ids:
            return True
        keys = [self._key(g) for g in group_ids]
        return int(self._known(keys=keys)) == len(keys)  # EXISTS counts a repeated key again

    def delete_group(self, group_id: str) -> None:
        self._client.delete(self._key(group_id))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
