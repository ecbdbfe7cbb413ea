"""Continuation tokens: the record of what a later step needs, and its one wire codec.

A token travels with every TaskCall and TimerCall and comes back in ``task_succeeded``,
``task_failed`` or ``timer_fired``; the engine keeps nothing else between calls except
fan-out groups in the ``ExecutionStore``, whose *parent* is a token too (kind ``GROUP``).

Tokens ride in every event, so the wire form is compact JSON with short keys. Only
``encode_token``/``decode_token`` know those keys; the rest of the package uses the
records. A token is read only by the same version of the code (``TOKEN_VERSION``), and
``decode_token(encode_token(t)) == t`` for every token ``t`` holding JSON values.

Store group ids are built here too (``group_id``, ``join_group_id``, ``end_guard_id``,
``restart_guard_id``):
they are deterministic, so a replayed event recomputes the same id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

TOKEN_VERSION = 2


class TokenKind(StrEnum):
    """What a token continues; the value is what the wire form stores."""

    TASK = "task"  # an ASL Task's TaskCall: report with task_succeeded / task_failed
    WAIT = "wait"  # a Wait state's TimerCall: ``output`` goes to the Wait's Next
    RETRY = "retry"  # a Retrier's TimerCall: re-enter ``state`` with ``raw_input``
    NATIVE = "native"  # a native grain's TaskCall
    GROUP = "group"  # the parent of a Parallel/Map group, kept in the ExecutionStore


@dataclass(frozen=True, slots=True)
class Execution:
    """The execution part of the context object ``$$.Execution`` (Name = Id), and which run
    of it this is: 0 the first, N its Nth redrive."""

    id: str
    input: Any
    start_time: str  # ISO 8601, e.g. 2024-05-01T10:00:00.000Z
    redrive_count: int = 0
    redrive_time: str = ""  # ISO 8601 when this run (a redrive) began, else ""

    @property
    def scope(self) -> str:
        """What the store groups of this run are named under: the id for the first run, the
        id and the redrive's number for a redrive. A redrive enters its states with the
        entry counts of a fresh run, so without the number its groups would be the groups
        of the run before it, found closed (decision 0018, "Redrive")."""
        return self.id if not self.redrive_count else f"{self.id}/redrive-{self.redrive_count}"


@dataclass(frozen=True, slots=True)
class Frame:
    """One enclosing Parallel or Map run of the state a token belongs to."""

    group_id: str  # the store group of that run
    slot: int  # the branch index (Parallel) or item index (Map)
    claims_next: bool = False  # Map with MaxConcurrency: finishing claims the next item


@dataclass(frozen=True, slots=True)
class Lineage:
    """Where a thread of an execution is: its execution, enclosing runs, entries so far,
    and the workflow variables visible to it (``variables``; decision 0020).

    ``entries`` counts the states entered in the innermost branch; it makes group ids
    unique and deterministic.
    """

    execution: Execution
    frames: tuple[Frame, ...] = ()
    entries: int = 0
    variables: Mapping[str, Any] = field(default_factory=dict)

    def entered(self) -> Lineage:
        """This lineage after entering one more state."""
        return replace(self, entries=self.entries + 1)

    def child(self, frame: Frame) -> Lineage:
        """The lineage of a branch or item run inside ``frame``: it reads the variables of
        this one, and what it assigns stays inside it."""
        return Lineage(self.execution, (*self.frames, frame), 0, self.variables)

    def with_variables(self, variables: Mapping[str, Any]) -> Lineage:
        """This lineage once a state's Assign took effect."""
        if variables is self.variables:
            return self
        return replace(self, variables=variables)

    def group_ids(self) -> list[str]:
        return [f.group_id for f in self.frames]

    def group_id(self, state: str) -> str:
        """The store group of a Parallel/Map run of ``state`` entered at this point."""
        if not self.frames:
            scope = self.execution.scope
        else:
            scope = f"{self.frames[-1].group_id}/{self.frames[-1].slot}"
        return f"{scope}/{state}#{self.entries}"


def join_group_id(execution_id: str, grain: str) -> str:
    """The store group collecting the predecessors' outputs of native join ``grain``."""
    return f"{execution_id}/join/{grain}"


def end_guard_id(execution_id: str) -> str:
    """The store group that lets exactly one grain end a concurrent native execution."""
    return f"{execution_id}/end"


def restart_guard_id(execution: Execution) -> str:
    """The store group that lets exactly one replayed event restart a run of an execution
    whose fan-out state was lost with its host (``Engine.replayed``)."""
    return f"{execution.scope}/restart"


@dataclass(frozen=True, slots=True, kw_only=True)
class Token:
    """Everything needed to continue an execution at one state.

    ``kind``           what the token continues (``TokenKind``).
    ``state``          the state (ASL) or grain (native) it belongs to.
    ``lineage``        execution, enclosing Parallel/Map runs and entry counter.
    ``entered_time``   ``$$.State.EnteredTime`` of ``state`` (TASK, GROUP), else "".
    ``raw_input``      the state's raw input, when finishing it needs it (TASK only when
                       ResultPath, Retry or Catch use it; RETRY and GROUP always).
    ``retry_counts``   attempts made so far per Retrier of ``state`` (empty: none).
    ``output``         WAIT: the Wait state's output, passed on when the timer fires.
    ``items``          GROUP of a Map: the selected items, one per slot.
    ``pending``        GROUP of a Map a redrive entered keeping some items' outputs: the
                       slots still to run, in claim order (empty: every slot).
    ``callback``       TASK of a callback task (``.waitForTaskToken``): its task token and
                       when the wait for the callback ends (decision 0033).
    """

    kind: TokenKind
    state: str
    lineage: Lineage
    entered_time: str = ""
    raw_input: Any = None
    retry_counts: tuple[int, ...] = ()
    output: Any = None
    items: tuple[Any, ...] = ()
    pending: tuple[int, ...] = ()
    callback: Callback | None = None


@dataclass(frozen=True, slots=True)
class Callback:
    """What a callback task waits with: its task token, the epoch ms at which its
    TimeoutSeconds (counted from the state's entry) runs out, and its HeartbeatSeconds in ms
    (0: none)."""

    task_token: str
    timeout_at_ms: int
    heartbeat_ms: int = 0


# Wire form, e.g. (absent keys hold the field's default):
#   {"v":2,"k":"task","s":"Resize","x":"exec-1","in":{},"t":"2024-...Z","n":3,
#    "fr":[{"g":"exec-1/Fan#2","i":0},{"g":"exec-1/Fan#2/0/Each#1","i":4,"m":1}],
#    "et":"2024-...Z","raw":{...},"rc":[1,0],"var":{"total":3},"rd":2,"rt":"2024-...Z"}
def encode_token(token: Token) -> str:
    """The compact JSON wire form of ``token``."""
    lineage = token.lineage
    body: dict[str, Any] = {
        "v": TOKEN_VERSION,
        "k": token.kind.value,
        "s": token.state,
        "x": lineage.execution.id,
        "in": lineage.execution.input,
        "t": lineage.execution.start_time,
        "n": lineage.entries,
        "fr": [_frame_to_wire(f) for f in lineage.frames],
    }
    if token.entered_time:
        body["et"] = token.entered_time
    if token.raw_input is not None:
        body["raw"] = token.raw_input
    if token.retry_counts:
        body["rc"] = list(token.retry_counts)
    if token.output is not None:
        body["out"] = token.output
    if token.items:
        body["items"] = list(token.items)
    if token.pending:
        body["run"] = list(token.pending)
    if token.callback is not None:
        cb = token.callback
        body["cb"] = [cb.task_token, cb.timeout_at_ms, cb.heartbeat_ms]
    if lineage.variables:
        body["var"] = lineage.variables
    if lineage.execution.redrive_count:
        body["rd"] = lineage.execution.redrive_count
        body["rt"] = lineage.execution.redrive_time
    return dumps(body)


def decode_token(text: str) -> Token:
    """The token ``encode_token`` wrote; raises ValueError for anything else."""
    try:
        body = json.loads(text)
    except (TypeError, ValueError):
        raise ValueError("malformed workflow token: not JSON") from None
    if not isinstance(body, dict) or body.get("v") != TOKEN_VERSION:
        raise ValueError(f"malformed workflow token (version {TOKEN_VERSION} expected)")
    try:
        execution = Execution(
            _str(body["x"]),
            body["in"],
            _str(body["t"]),
            _int(body.get("rd", 0)),
            _str(body.get("rt", "")),
        )
        frames = tuple(
            Frame(_str(f["g"]), _int(f["i"]), bool(f.get("m", False))) for f in body["fr"]
        )
        return Token(
            kind=TokenKind(body["k"]),
            state=_str(body["s"]),
            lineage=Lineage(execution, frames, _int(body["n"]), _object(body.get("var", {}))),
            entered_time=_str(body.get("et", "")),
            raw_input=body.get("raw"),
            retry_counts=tuple(_int(c) for c in body.get("rc", ())),
            output=body.get("out"),
            items=tuple(body.get("items", ())),
            pending=tuple(_int(i) for i in body.get("run", ())),
            callback=_callback(body.get("cb")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed workflow token: {exc!r}") from None


def dumps(value: Any) -> str:
    """Compact JSON, as stored in tokens and in the ExecutionStore."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _frame_to_wire(frame: Frame) -> dict[str, Any]:
    wire: dict[str, Any] = {"g": frame.group_id, "i": frame.slot}
    if frame.claims_next:
        wire["m"] = 1
    return wire


def _callback(wire: Any) -> Callback | None:
    if wire is None:
        return None
    task_token, timeout_at_ms, heartbeat_ms = wire
    return Callback(_str(task_token), _int(timeout_at_ms), _int(heartbeat_ms))


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    return value


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"expected an object, got {value!r}")
    return value


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an integer, got {value!r}")
    return value
