"""The data layer: a small key-value store per application and scope.

Grains use it through ``context.data`` (:class:`sand.grain.Data`), which encodes
values and picks the store of the scope. A backend implements :class:`DataStore`
for one application and one scope, on raw bytes:

- :class:`sand.data.memory.MemoryDataStore` — the emulator's, shared by the forked
  grain processes of one emulation through :class:`sand.data.memory.MemoryDataServer`;
- :class:`sand.data.memory.DictDataStore` — one process only, for unit tests;
- :class:`sand.data.redis.RedisDataStore` — the local data layer of a host;
- :class:`sand.data.agent.AgentDataStore` — the global data layer (Cassandra), reached
  through the host agent; :class:`sand.data.written.RecordingDataStore` notes what an
  instance wrote there for recovery.

Value encoding (what a backend stores): one tag byte, then the payload —
``b"B"`` + the bytes as given, or ``b"J"`` + UTF-8 JSON.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol, runtime_checkable

from sand_contracts import constants as _c

Scope = Literal["local", "global"]
SCOPES: tuple[Scope, ...] = ("local", "global")
MAX_KEY_BYTES: int = _c.DATA_MAX_KEY_BYTES
# An encoded value in the global scope (Cassandra); the host agent refuses larger ones too.
MAX_GLOBAL_VALUE_BYTES: int = _c.GDATA_MAX_VALUE_BYTES

_BYTES_TAG = b"B"
_JSON_TAG = b"J"


class DataStoreError(Exception):
    """A backend failed (connection lost, server error); the message names the operation."""


@runtime_checkable
class DataStore(Protocol):
    """Raw key-value storage of one application in one scope.

    Keys are non-empty strings; values are bytes. Implementations are safe to use
    from the process that created them and from processes forked after that.
    Methods block; they raise :class:`DataStoreError` when the backend fails.
    """

    def get(self, key: str) -> bytes | None:
        """The value of ``key``, or None when absent."""
        ...

    def put(self, key: str, value: bytes) -> None:
        """Set ``key`` to ``value``, replacing any previous value."""
        ...

    def delete(self, key: str) -> bool:
        """Remove ``key``; True when it existed."""
        ...

    def keys(self, prefix: str = "") -> list[str]:
        """The keys that start with ``prefix``, sorted."""
        ...


def check_scope(scope: str) -> Scope:
    """``scope`` itself when valid; raises ValueError naming the value otherwise."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be 'local' or 'global', got {scope!r}")
    return scope  # type: ignore[return-value]


def check_key(key: object) -> str:
    """``key`` itself when it is a usable data-layer key; raises otherwise."""
    if not isinstance(key, str):
        raise TypeError(f"data key must be a string, got {type(key).__name__}")
    if not key:
        raise ValueError("data key must not be empty")
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise ValueError(f"data key {key[:40]!r}... is longer than {MAX_KEY_BYTES} bytes")
    return key


def check_value_size(key: str, raw: bytes, scope: Scope) -> bytes:
    """``raw`` (an encoded value) itself when ``scope`` can hold it; ValueError otherwise.

    Only the global scope has a limit (Cassandra rows stay small): the same in the
    emulator and on the cluster, where the host agent enforces it as well.
    """
    if scope == "global" and len(raw) > MAX_GLOBAL_VALUE_BYTES:
        raise ValueError(
            f"data value for key {key[:40]!r} is {len(raw)} bytes encoded; the global data "
            f"layer holds at most {MAX_GLOBAL_VALUE_BYTES} bytes per value"
        )
    return raw


def encode_value(value: Any) -> bytes:
    """Encode bytes as themselves, anything else as JSON; raises TypeError when neither."""
    if isinstance(value, bytes | bytearray | memoryview):
        return _BYTES_TAG + bytes(value)
    try:
        text = json.dumps(value, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"data value must be bytes or JSON-serialisable: {exc}") from None
    return _JSON_TAG + text.encode("utf-8")


def decode_value(raw: bytes) -> Any:
    """The inverse of :func:`encode_value`."""
    tag, payload = raw[:1], raw[1:]
    if tag == _BYTES_TAG:
        return payload
    if tag == _JSON_TAG:
        return json.loads(payload)
    raise DataStoreError(f"stored value has an unknown encoding tag {tag!r}")


__all__ = [
    "MAX_GLOBAL_VALUE_BYTES",
    "MAX_KEY_BYTES",
    "SCOPES",
    "DataStore",
    "DataStoreError",
    "Scope",
    "check_key",
    "check_scope",
    "check_value_size",
    "decode_value",
    "encode_value",
]
