"""The values a grain invocation goes in and comes out as, and the result's wire form.

:class:`Invocation` is what a child needs to run one event through one grain;
:class:`GrainResult` is how it ended. :func:`encode_result` /
:func:`decode_result` are the JSON form a child sends its parent
(:mod:`sand.grain.channel`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class GrainError(StrEnum):
    """The ASL error names SAND produces itself (exceptions keep their class name)."""

    TIMEOUT = "States.Timeout"
    TASK_FAILED = "States.TaskFailed"
    RUNTIME = "States.Runtime"
    DATA_LIMIT_EXCEEDED = "States.DataLimitExceeded"


@dataclass(frozen=True, slots=True)
class Invocation:
    """Everything a child needs to run one event through one grain."""

    app_name: str
    grain_name: str
    execution_id: str
    input: Any
    timeout_s: float
    payload_limit_bytes: int = 256 * 1024
    # Grains this grain may choose at run time (context.add_next).
    potential_next: frozenset[str] = frozenset()
    # The ASL context object ($$) of the task.
    state: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GrainResult:
    """How one invocation ended: ``output`` when ok, else ``error`` and ``cause``.

    ``next_grains`` is None unless the grain chose next grains with
    ``context.add_next``. ``traceback`` is for logs, never for the workflow.
    """

    output: Any = None
    next_grains: tuple[str, ...] | None = None
    error: str | None = None
    cause: str | None = None
    traceback: str | None = None
    duration_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    @classmethod
    def failure(
        cls, error: str, cause: str, *, traceback: str | None = None, duration_ms: float = 0.0
    ) -> GrainResult:
        return cls(error=str(error), cause=cause, traceback=traceback, duration_ms=duration_ms)

    def with_duration(self, duration_ms: float) -> GrainResult:
        """This result, timed as ``duration_ms`` (the parent's view of the whole instance)."""
        return dataclasses.replace(self, duration_ms=duration_ms)


def encode_result(result: GrainResult) -> bytes:
    """The result as UTF-8 JSON (the body of a RESULT frame)."""
    doc: dict[str, Any] = {"duration_ms": result.duration_ms}
    if result.ok:
        doc["output"] = result.output
        doc["next_grains"] = None if result.next_grains is None else list(result.next_grains)
    else:
        doc.update(error=result.error, cause=result.cause, traceback=result.traceback)
    return json.dumps(doc).encode("utf-8")


def decode_result(payload: bytes) -> GrainResult:
    """The inverse of :func:`encode_result`; raises ValueError on a malformed payload."""
    doc = json.loads(payload)
    if not isinstance(doc, dict):
        raise ValueError("grain result must be a JSON object")
    duration_ms = float(doc.get("duration_ms", 0.0))
    if doc.get("error") is not None:
        return GrainResult.failure(
            str(doc["error"]),
            str(doc.get("cause") or ""),
            traceback=doc.get("traceback"),
            duration_ms=duration_ms,
        )
    next_grains = doc.get("next_grains")
    return GrainResult(
        output=doc.get("output"),
        next_grains=None if next_grains is None else tuple(next_grains),
        duration_ms=duration_ms,
    )
