"""Per-step timing and W3C trace context in event headers (sand_worker.trace)."""

from __future__ import annotations

import json

import pytest
from sand.contracts import TRACEPARENT_HEADER
from sand_worker.trace import TRACE_HEADER, Trace, TraceParent

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
VALID = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


def test_parse_valid_keepsItsParts() -> None:
    """A valid traceparent gives its trace id, parent span id and flags."""
    parent = TraceParent.parse(VALID)
    assert parent == TraceParent(trace_id=TRACE_ID, parent_id="00f067aa0ba902b7", flags="01")
    later = TraceParent.parse(f"cc-{TRACE_ID}-00f067aa0ba902b7-01-future")
    assert later is not None and later.trace_id == TRACE_ID


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "garbage",
        f"ff-{TRACE_ID}-00f067aa0ba902b7-01",
        f"00-{TRACE_ID}-00f067aa0ba902b7-01-extra",
        f"00-{'0' * 32}-00f067aa0ba902b7-01",
        f"00-{TRACE_ID}-{'0' * 16}-01",
        f"00-{TRACE_ID.upper()}-00f067aa0ba902b7-01",
    ],
)
def test_parse_invalid_isIgnored(value: str | None) -> None:
    """Whatever breaks the W3C rules is ignored (None), never raised."""
    assert TraceParent.parse(value) is None


def test_fromHeaders_untraced_isNone() -> None:
    """An event without the trace header is untraced: nothing is built for it."""
    assert Trace.from_headers(None, "g", "TASK", 0) is None
    assert Trace.from_headers({TRACEPARENT_HEADER: VALID}, "g", "TASK", 0) is None


def test_traceparent_chainsEachRunToTheOneBefore() -> None:
    """The first run's parent is the caller's span; the events it produces name its own span
    as the parent of the next run; the result document carries the trace id."""
    first = Trace.from_headers(
        {TRACE_HEADER: "[]", TRACEPARENT_HEADER: VALID}, "normalize", "INVOKE", 1000
    )
    assert first is not None
    assert first.span.parent_id == "00f067aa0ba902b7"
    headers = first.headers()
    assert headers[TRACEPARENT_HEADER] == f"00-{TRACE_ID}-{first.span.span_id}-01"
    second = Trace.from_headers(headers, "greet", "TASK", 2000)
    assert second is not None
    assert second.span.parent_id == first.span.span_id
    assert second.span.span_id != first.span.span_id
    document = second.document()
    assert document["trace_id"] == TRACE_ID
    spans = document["spans"]
    assert [s["grain"] for s in spans] == ["normalize", "greet"]
    assert spans[1]["parent_id"] == spans[0]["span_id"]
    assert json.loads(headers[TRACE_HEADER])[0]["span_id"] == first.span.span_id


def test_traceWithoutTraceparent_hasNoTraceId() -> None:
    """?trace=1 alone: spans with ids, no trace id, and no traceparent passed on."""
    trace = Trace.from_headers({TRACE_HEADER: "[]"}, "g", "INVOKE", 0)
    assert trace is not None
    assert TRACEPARENT_HEADER not in trace.headers()
    assert "trace_id" not in trace.document()
