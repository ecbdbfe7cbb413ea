"""Per-step timing and W3C trace context in event headers (sand_worker.trace)."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from sand.contracts import TRACE_HEADER, TRACEPARENT_HEADER
from sand_worker.trace import Span, Trace, TraceParent

OPENAPI = Path(__file__).resolve().parents[3] / "frontend" / "openapi.yaml"

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


# -- the JSON the worker writes is the one frontend/openapi.yaml declares ----------------------
# (ExecutionTrace and TraceSpan; the host agent's TraceSpans reads the same names, checked by
# dev.sand.contracts.TraceDocumentTest)

JSON_TYPES: dict[Any, str] = {str: "string", float: "number", int: "integer", type(None): "null"}


def schema(name: str) -> dict[str, Any]:
    schemas: dict[str, Any] = yaml.safe_load(OPENAPI.read_text())["components"]["schemas"]
    return dict(schemas[name])


def json_types(hint: Any) -> set[str]:
    """The JSON types a field's type hint allows (``float | None``: number, null)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return {t for arg in typing.get_args(hint) for t in json_types(arg)}
    return {JSON_TYPES[hint]}


def schema_types(prop: dict[str, Any]) -> set[str]:
    declared = prop["type"]
    return {declared} if isinstance(declared, str) else set(declared)


def test_spanJson_isTraceSpan() -> None:
    """A span's JSON has exactly TraceSpan's properties, all of them (all required), each of
    the JSON type its field holds."""
    span = Span(grain="g", kind="TASK", queued=1.0, took=2.0, span_id="00f067aa0ba902b7")
    declared = schema("TraceSpan")
    written = span.as_json()
    assert set(written) == set(declared["properties"])
    assert set(written) == set(declared["required"])
    hints = typing.get_type_hints(Span)
    fields = {f.name for f in dataclasses.fields(Span)}
    assert fields == set(written), "Span's fields are its JSON keys"
    wrong = {
        name: (sorted(json_types(hints[name])), sorted(schema_types(prop)))
        for name, prop in declared["properties"].items()
        if json_types(hints[name]) != schema_types(prop)
    }
    assert wrong == {}, "field: (the worker writes, openapi.yaml declares)"


def test_traceDocument_isExecutionTrace() -> None:
    """The result document's ``trace`` has ExecutionTrace's properties: the required ones
    always, ``trace_id`` when the caller sent a traceparent."""
    declared = schema("ExecutionTrace")
    untraced = Trace.from_headers({TRACE_HEADER: "[]"}, "g", "INVOKE", 0)
    traced = Trace.from_headers({TRACE_HEADER: "[]", TRACEPARENT_HEADER: VALID}, "g", "INVOKE", 0)
    assert untraced is not None and traced is not None
    assert set(untraced.document()) == set(declared["required"])
    assert set(traced.document()) == set(declared["properties"])
    assert declared["properties"]["spans"]["items"] == {"$ref": "#/components/schemas/TraceSpan"}
