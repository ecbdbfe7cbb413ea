"""Per-step timing of one execution, carried in the events' headers when asked for.

A traced invocation (``POST .../invoke?trace=1``) carries the header ``trace``: a JSON
list of spans, one per event handled so far on the execution's path, and
``t_frontend_in`` (epoch seconds) set by the frontend (``HEADER_TRACE`` and
``HEADER_FRONTEND_IN`` in contracts.thrift). Each instance appends its span — when the
event was queued, taken, when the grain started and ended, when the outputs were pushed —
and passes the list on with the events it produces; the final result document gets
``trace``. The span's JSON and the document's are ``TraceSpan`` and ``ExecutionTrace`` of
``frontend/openapi.yaml`` (tests/unit/worker/test_trace.py holds them to it). Epoch
seconds throughout: every process of a host reads the same clock. Untraced events carry
nothing and cost nothing.

A caller's W3C ``traceparent`` (decision 0019) rides along in the event header
``sand-traceparent``: each span gets an id of its own and, as its parent, the span named
there (the caller's span for the first grain run, the producing grain run's after);
the instance passes a traceparent naming its own span on to the events it produces. The
host agent exports the spans of the finished execution over OTLP.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

from sand.contracts import FRONTEND_IN_HEADER, TRACE_HEADER, TRACEPARENT_HEADER

# W3C Trace Context, "traceparent": version-traceid-parentid-flags, lowercase hex. Version
# ff is invalid; a later version may append "-..." fields, which are ignored.
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


@dataclass(frozen=True, slots=True)
class TraceParent:
    """A valid W3C ``traceparent``: the trace and the span that is the next span's parent."""

    trace_id: str
    parent_id: str
    flags: str

    @classmethod
    def parse(cls, value: str | None) -> TraceParent | None:
        """The traceparent in ``value``, or None when it is absent or not valid (the W3C
        rule: an invalid traceparent is ignored, never an error)."""
        if value is None:
            return None
        match = _TRACEPARENT.fullmatch(value.strip(" \t"))
        if match is None:
            return None
        version, trace_id, parent_id, flags, rest = match.groups()
        if version == "ff" or (version == "00" and rest is not None):
            return None
        if trace_id == _ZERO_TRACE or parent_id == _ZERO_SPAN:
            return None
        return cls(trace_id=trace_id, parent_id=parent_id, flags=flags)

    def child(self, span_id: str) -> str:
        """The traceparent that makes ``span_id`` the parent of what comes next."""
        return f"00-{self.trace_id}-{span_id}-{self.flags}"


def new_span_id() -> str:
    """A random, non-zero 8-byte span id as 16 lowercase hex digits."""
    while True:
        span_id = os.urandom(8).hex()
        if span_id != _ZERO_SPAN:
            return span_id


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
    span_id: str = ""
    parent_id: str | None = None  # the span that produced the event; None: unknown

    def as_json(self) -> dict[str, Any]:
        return {
            "span_id": self.span_id,
            "parent_id": self.parent_id,
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
    parent: TraceParent | None = None

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
        parent = TraceParent.parse((headers or {}).get(TRACEPARENT_HEADER))
        return cls(
            frontend_in=(headers or {}).get(FRONTEND_IN_HEADER, ""),
            earlier=earlier if isinstance(earlier, list) else [],
            span=Span(
                grain=grain,
                kind=kind,
                queued=queued_ms / 1000,
                took=time.time(),
                span_id=new_span_id(),
                parent_id=parent.parent_id if parent is not None else None,
            ),
            parent=parent,
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
        headers = {TRACE_HEADER: json.dumps(self.spans()), FRONTEND_IN_HEADER: self.frontend_in}
        if self.parent is not None:
            headers[TRACEPARENT_HEADER] = self.parent.child(self.span.span_id)
        return headers

    def document(self) -> dict[str, Any]:
        """What the result document carries under ``trace`` (with ``trace_id`` when the
        caller sent a traceparent)."""
        frontend_in = float(self.frontend_in) if self.frontend_in else None
        document: dict[str, Any] = {"frontend_in": frontend_in, "spans": self.spans()}
        if self.parent is not None:
            document["trace_id"] = self.parent.trace_id
        return document
