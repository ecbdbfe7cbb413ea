"""The local bus as the worker sees it: Redis connections and the Thrift event codec."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from sand.contracts import HEADER_CALLBACK, HEADER_CALLBACK_OUTCOME, HEADER_NAME, HEADER_TRIGGER
from sand.localbus import LocalBus
from sand_bus.constants import FINAL_FLAG
from sand_bus.ttypes import EventFlag, EventKind, EventMessage
from thrift.protocol import TCompactProtocol
from thrift.TSerialization import deserialize, serialize

from sand_worker.config import WorkerConfig

# The C-accelerated compact protocol when the thrift wheel has it (it does on
# CPython x86-64); byte-for-byte the same encoding as the pure one.
_PROTOCOL = TCompactProtocol.TCompactProtocolAcceleratedFactory()

__all__ = [
    "FINAL_FLAG",
    "EventFlag",
    "EventKind",
    "EventMessage",
    "connect",
    "decode",
    "encode",
    "new_event",
]


def connect(config: WorkerConfig) -> LocalBus:
    """The client of the host's Redis (decision 0028). It connects at its first command, and
    a forked child that uses it opens a connection of its own."""
    return LocalBus(
        str(config.redis_socket), username=config.redis_user, password=config.redis_password
    )


def encode(message: EventMessage) -> bytes:
    return serialize(message, _PROTOCOL)


def decode(raw: bytes) -> EventMessage:
    return deserialize(EventMessage(), raw, _PROTOCOL)


def now_ms() -> int:
    return int(time.time() * 1000)


def new_event(source: EventMessage, **fields: Any) -> EventMessage:
    """A new event of the same execution as ``source`` (ids and routing carried over)."""
    base: dict[str, Any] = {
        "execution_id": source.execution_id,
        "app": source.app,
        "workflow": source.workflow,
        "reply_to": source.reply_to,
        "flag": EventFlag.QUEUED,
        "created_ms": now_ms(),
        "attempt": 0,
        "event_id": uuid.uuid4().hex,
        "headers": _inherited(source.headers),
    }
    base.update(fields)
    return EventMessage(**base)


# A callback task's wait and its outcome belong to the one TIMER that carries them: an event
# made from it must not look like a parked wait (or carry the outcome's bytes along). The
# trigger that started the execution (sand-trigger) travels on, like its start time, so that
# the grain that ends it writes it into the result document.
_OWN_HEADERS = (HEADER_CALLBACK, HEADER_CALLBACK_OUTCOME)


def _inherited(headers: dict[str, str] | None) -> dict[str, str] | None:
    if not headers or not any(h in headers for h in _OWN_HEADERS):
        return headers
    return {k: v for k, v in headers.items() if k not in _OWN_HEADERS}


def warm_up() -> None:
    """Load lazily imported code (the codec's C extension, ...) before forking, so that
    no instance pays for it on the critical path."""
    decode(encode(EventMessage(execution_id="warm-up", payload=b"{}", headers={"a": "b"})))
    json.loads(dumps({"warm": [1, 2.0, None, True]}))


def started_by(headers: dict[str, str] | None) -> dict[str, Any]:
    """Who started the execution of an INVOKE event, as its ExecutionStarted records it
    (``history.amend_start``): ``name``, the execution's name when it was started
    idempotently (``sand-name``), and ``trigger``, the trigger that fired it (``sand-trigger``,
    decision 0034), each None when absent."""
    headers = headers or {}
    return {"name": headers.get(HEADER_NAME) or None, "trigger": trigger_of(headers)}


def trigger_of(headers: dict[str, str]) -> dict[str, Any] | None:
    """Header ``sand-trigger`` parsed; None when absent or not a JSON object: a bad header
    never fails the execution it rides on."""
    raw = headers.get(HEADER_TRIGGER)
    if not raw:
        return None
    try:
        trigger = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return trigger if isinstance(trigger, dict) else None


def payload_of(message: EventMessage) -> Any:
    return json.loads(message.payload) if message.payload else None


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()
