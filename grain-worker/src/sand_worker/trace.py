"""Per-step timing of one execution, carried in the events' headers when asked for.

A traced invocation (``POST .../invoke?trace=1``) carries the header ``trace``: a JSON
list of spans, one per event handled so far on the execution's path, and
``t_frontend_in`` (epoch seconds) set by the frontend. Each instance appends its span
— when the event was queued, taken, when the grain started and ended, when the
outputs were pushed — and passes the list on with the events it produces; the final
result document gets ``trace``. Epoch seconds throughout: every process of a host
reads the same clock. Untraced events carry nothing and cost nothing.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

TRACE_HEADER = "trace"
FRONTEND_IN_HEADER = "t_frontend_in"


@dataclass(slots=True)
class Span:
    """One event on the execution's path (mutable while its instance runs)."""

    grain: str
    kind: str
    queued: float
    took: float
    start: float | None = None
    end: float | None = None
    pushed: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "grain": self.grain,
            "kind": self.kind,
            "queued": self.queued,
            "took": self.took,
            "start": self.start,
            "end": self.end,
            "pushed": self.pushed,
        }


@dataclass(slots=True)
class Trace:
    """The spans before this event, and this event's own span."""

    frontend_in: str
    earlier: list[dict[str, Any]]
    span: Span
    extra: list[Span] = field(default_factory=list)

    @classmethod
    def from_headers(
        cls, headers: dict[str, str] | None, grain: str, kind: str, queued_ms: int
    ) -> Trace | None:
        """The trace of an event, or None when the event is not traced."""
        raw = (headers or {}).get(TRACE_HEADER)
        if raw is None:
            return None
        try:
            earlier = json.loads(raw)
        except ValueError:
            earlier = []
        return cls(
            frontend_in=(headers or {}).get(FRONTEND_IN_HEADER, ""),
            earlier=earlier if isinstance(earlier, list) else [],
            span=Span(grain=grain, kind=kind, queued=queued_ms / 1000, took=time.time()),
        )

    def started(self) -> None:
        if self.span.start is None:
            self.span.start = time.time()

    def ended(self) -> None:
        self.span.end = time.time()

    def spans(self) -> list[dict[str, Any]]:
        if self.span.pushed is None:
            self.span.pushed = time.time()
        return [*self.earlier, self.span.as_json()]

    def headers(self) -> dict[str, str]:
        """Headers that carry this trace into the events this instance produces."""
        return {TRACE_HEADER: json.dumps(self.spans()), FRONTEND_IN_HEADER: self.frontend_in}

    def document(self) -> dict[str, Any]:
        """What the result document carries under ``trace``."""
        frontend_in = float(self.frontend_in) if self.frontend_in else None
        return {"frontend_in": frontend_in, "spans": self.spans()}
