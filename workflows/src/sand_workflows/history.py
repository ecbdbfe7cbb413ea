"""An execution's history: what the engine did, one event per fact (decision 0018).

The engine reports facts (a state entered, a task scheduled, a retry, a branch that
failed...) through :func:`emit`; a driver that wants them opens a :class:`Recorder` with
:func:`recording` around its calls into the engine, and every event of those calls lands
in it. Without an open recording :func:`emit` returns at once: the engine pays one
context-variable read per fact. A context variable (not an engine attribute) because one
engine serves every event of its worker process, and the emulator's threads.

Events are JSON objects with the same keys on the cluster (a grain instance ships the
events of one step to its host agent, which records them in Cassandra) and in the
emulator (``EmulationResult.steps``):

``type``          what happened (``TYPES``)
``at_ms``         epoch milliseconds
``execution_id``  the execution
``state``         the state (ASL) or grain (native) it concerns; None for the execution
``path``          where that state is: "" at the top level, ``Fan[1]`` in branch 1 of
                  Parallel ``Fan``, ``Each[3]/Fan[0]`` nested (Map item 3, then branch 0)

plus the fields of each type (inputs and outputs, errors, the grain and the instance
that ran it). In the record (:func:`encode`, what the cluster stores) a value whose JSON is
larger than ``MAX_VALUE_BYTES`` is replaced by ``{"truncated": true, "bytes": N, "preview":
<its first 1,024 characters>}``; the emulator keeps values whole.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

from .tokens import Lineage, decode_token

TYPES: Final = frozenset(
    {
        "ExecutionStarted",
        "ExecutionRedriven",
        "StateEntered",
        "StateExited",
        "StateFailed",
        "TaskScheduled",
        "TaskSubmitted",
        "TaskStarted",
        "TaskSucceeded",
        "TaskFailed",
        "TaskTimedOut",
        "RetryScheduled",
        "Caught",
        "WaitStarted",
        "WaitEnded",
        "ParallelStarted",
        "MapStarted",
        "BranchSucceeded",
        "BranchFailed",
        "ExecutionSucceeded",
        "ExecutionFailed",
        "ExecutionAborted",
    }
)
# The fields whose values are the user's data (so they may be large).
_VALUE_FIELDS: Final = ("input", "output", "steps", "variables")
MAX_VALUE_BYTES: Final = 32 * 1024
PREVIEW_CHARS: Final = 1024


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Recorder:
    """The events of the engine calls made while it is open (see :func:`recording`).

    ``fields`` are added to every event (where it ran: ``host``, ``pid``); ``clock_ms``
    gives ``at_ms``; ``on_event`` sees each event as it is recorded.
    """

    def __init__(
        self,
        clock_ms: Callable[[], int] = _now_ms,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        **fields: Any,
    ) -> None:
        self.events: list[dict[str, Any]] = []
        self._clock_ms = clock_ms
        self._on_event = on_event
        self._fields = fields
        self._steps: dict[str, Any] = {}
        self._started: dict[tuple[str, str | None], int] = {}

    def add(
        self, type: str, execution_id: str, path: str, state: str | None, **fields: Any
    ) -> None:
        at = self._clock_ms()
        event: dict[str, Any] = {
            "type": type,
            "at_ms": at,
            "execution_id": execution_id,
            "state": state,
            "path": path,
            **self._fields,
        }
        event.update(fields)
        where = (path, state)
        if type == "TaskStarted":
            self._started[where] = at
        elif type in ("TaskSucceeded", "TaskFailed") and where in self._started:
            event["duration_ms"] = at - self._started.pop(where)
        self.events.append(event)
        if self._on_event is not None:
            self._on_event(event)

    def step(self, name: str, value: Any) -> None:
        self._steps[name] = value

    def take_steps(self) -> dict[str, Any]:
        steps, self._steps = self._steps, {}
        return steps


_current: ContextVar[Recorder | None] = ContextVar("sand_workflows_history", default=None)


@contextmanager
def recording(recorder: Recorder | None) -> Iterator[Recorder | None]:
    """Record the events of the engine calls made inside the ``with`` block into
    ``recorder``; with None, record nothing (a driver whose app keeps no history)."""
    if recorder is None:
        yield None
        return
    reset = _current.set(recorder)
    try:
        yield recorder
    finally:
        _current.reset(reset)


def active() -> bool:
    """Whether a recording is open (so building an event's fields is worth it)."""
    return _current.get() is not None


def emit(type: str, lineage: Lineage, state: str | None, **fields: Any) -> None:
    """Record one event of the execution of ``lineage``, if a recording is open."""
    recorder = _current.get()
    if recorder is not None:
        recorder.add(type, lineage.execution.id, path_of(lineage), state, **fields)


def emit_execution(type: str, execution_id: str, **fields: Any) -> None:
    """Record an event of a whole execution a driver knows only by its id."""
    recorder = _current.get()
    if recorder is not None:
        recorder.add(type, execution_id, "", None, **fields)


def emit_for_token(type: str, token: str, **fields: Any) -> None:
    """Record one event about the state a continuation token belongs to (a driver's
    ``TaskStarted``: the driver knows the token, not the lineage)."""
    recorder = _current.get()
    if recorder is not None:
        tok = decode_token(token)
        recorder.add(type, tok.lineage.execution.id, path_of(tok.lineage), tok.state, **fields)


def amend_start(*, trigger: dict[str, Any] | None = None, **fields: Any) -> None:
    """Add a driver's facts (app, name, start time) to the ExecutionStarted or
    ExecutionRedriven event of the open recording, if it has one. ``trigger``, what started
    the execution (decision 0034), goes to an ExecutionStarted only, as field ``trigger``,
    and only when not None: a redrive is asked for by someone, not fired by the trigger."""
    recorder = _current.get()
    if recorder is None:
        return
    for event in recorder.events:
        if event["type"] in ("ExecutionStarted", "ExecutionRedriven"):
            event.update(fields)
            if trigger is not None and event["type"] == "ExecutionStarted":
                event["trigger"] = trigger
            return


def retract_end() -> None:
    """Drop the execution's end from the open recording: the driver did not let it end so
    (it was stopped, decision 0018; the stop recorded ExecutionAborted)."""
    recorder = _current.get()
    if recorder is not None:
        recorder.events[:] = [
            e for e in recorder.events if e["type"] not in ("ExecutionSucceeded", "ExecutionFailed")
        ]


def step(name: str, value: Any) -> None:
    """The value after one input/output processing step (``input_path``, ``parameters``,
    ``result_selector``, ``result_path``, ``output_path``...) of the state in progress."""
    recorder = _current.get()
    if recorder is not None:
        recorder.step(name, value)


def take_steps() -> dict[str, Any]:
    """The processing steps noted since the last call (for StateExited, TaskScheduled)."""
    recorder = _current.get()
    return recorder.take_steps() if recorder is not None else {}


def path_of(lineage: Lineage) -> str:
    """Where a lineage is: ``State[slot]`` per enclosing Parallel/Map run, joined by ``/``.

    A group id is ``<scope>/<state>#<entries>`` with the scope the run's
    (``tokens.Execution.scope``) or the enclosing group id and slot
    (``tokens.Lineage.group_id``): the state name is what lies between that known scope
    and the last ``#``, whatever characters it holds.
    """
    parts = []
    scope = lineage.execution.scope
    for frame in lineage.frames:
        state = frame.group_id[len(scope) + 1 : frame.group_id.rindex("#")]
        parts.append(f"{state}[{frame.slot}]")
        scope = f"{frame.group_id}/{frame.slot}"
    return "/".join(parts)


def encode(events: list[dict[str, Any]]) -> bytes:
    """``events`` as compact UTF-8 JSON for the record, each user value whose JSON exceeds
    ``MAX_VALUE_BYTES`` replaced by a marked preview (:func:`bounded`). One encoding when the
    whole list is that small (the usual case): the sizes are checked only when it is not."""
    text = json.dumps(events, ensure_ascii=False, separators=(",", ":"), default=str)
    if len(text) > MAX_VALUE_BYTES:
        smaller = [
            {name: bounded(value) if name in _VALUE_FIELDS else value for name, value in e.items()}
            for e in events
        ]
        text = json.dumps(smaller, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.encode()


def bounded(value: Any) -> Any:
    """``value``, or a marked preview of it when its JSON exceeds ``MAX_VALUE_BYTES``."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str) and len(value) < MAX_VALUE_BYTES // 6:
        return value  # short enough whatever its characters escape to
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    size = len(text.encode())
    if size <= MAX_VALUE_BYTES:
        return value
    return {"truncated": True, "bytes": size, "preview": text[:PREVIEW_CHARS]}
