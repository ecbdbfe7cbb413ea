"""Continuation tokens: the record, its one wire codec, and what the engine accepts."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from sand_workflows import load_workflow_text
from sand_workflows.engine import Engine, InMemoryStore, TaskCall, TimerCall
from sand_workflows.tokens import (
    TOKEN_VERSION,
    Execution,
    Frame,
    Lineage,
    Token,
    TokenKind,
    decode_token,
    encode_token,
)

EXECUTION = Execution("exec-1", {"in": [1, 2]}, "2024-05-01T10:00:00.000Z")
FRAMES = (Frame("exec-1/Fan#2", 0), Frame("exec-1/Fan#2/0/Each#1", 4, claims_next=True))


def token(**overrides: Any) -> Token:
    fields: dict[str, Any] = {
        "kind": TokenKind.TASK,
        "state": "Resize",
        "lineage": Lineage(EXECUTION, FRAMES, 3),
        "entered_time": "2024-05-01T10:00:01.000Z",
        "raw_input": {"a": None},
        "retry_counts": (1, 0),
    }
    return Token(**{**fields, **overrides})


@pytest.mark.parametrize(
    "tok",
    [
        token(),
        token(kind=TokenKind.WAIT, output=[1, "x"], raw_input=None, entered_time=""),
        token(kind=TokenKind.RETRY, retry_counts=(0, 2, 1)),
        token(kind=TokenKind.NATIVE, lineage=Lineage(EXECUTION), raw_input=None),
        token(kind=TokenKind.GROUP, items=({"k": 1}, [2], None, "s")),
        token(raw_input=0, output=False, retry_counts=()),
    ],
    ids=["task", "wait", "retry", "native", "group", "falsy-values"],
)
def test_encode_then_decode_round_trips_exactly(tok: Token) -> None:
    """Every field of every kind of token survives the wire form unchanged."""
    assert decode_token(encode_token(tok)) == tok


def test_wire_form_is_compact_json_that_leaves_out_empty_fields() -> None:
    """The wire form is one line of JSON with the version; empty fields take no space."""
    native = Token(kind=TokenKind.NATIVE, state="extract", lineage=Lineage(EXECUTION))
    text = encode_token(native)
    assert "\n" not in text and ", " not in text
    assert set(json.loads(text)) == {"v", "k", "s", "x", "in", "t", "n", "fr"}
    assert json.loads(text)["v"] == TOKEN_VERSION


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"v": 99}',
        json.dumps({**json.loads(encode_token(token())), "k": "unknown"}),
        json.dumps({**json.loads(encode_token(token())), "n": "3"}),
        json.dumps({k: v for k, v in json.loads(encode_token(token())).items() if k != "x"}),
    ],
    ids=["not-json", "not-object", "other-version", "bad-kind", "bad-count", "no-execution"],
)
def test_decode_rejects_anything_encode_did_not_write(text: str) -> None:
    """A token that is not ours raises ValueError, never KeyError or TypeError."""
    with pytest.raises(ValueError):
        decode_token(text)


def test_lineage_group_ids_are_deterministic_and_nested() -> None:
    """A group id names the enclosing run and slot, the state and the entry count."""
    top = Lineage(EXECUTION, (), 2)
    assert top.group_id("Fan") == "exec-1/Fan#2"
    inner = top.child(Frame("exec-1/Fan#2", 0)).entered()
    assert inner.group_id("Each") == "exec-1/Fan#2/0/Each#1"
    assert inner.group_ids() == ["exec-1/Fan#2"]


def test_engine_refuses_a_token_of_the_wrong_kind() -> None:
    """A Wait's timer token is not a task token, and a task token is not a timer token."""
    defn = {
        "StartAt": "W",
        "States": {
            "W": {"Type": "Wait", "Seconds": 1, "Next": "T"},
            "T": {"Type": "Task", "Resource": "g", "End": True},
        },
    }
    engine = Engine(load_workflow_text(yaml.safe_dump(defn), "t.yaml"), InMemoryStore())
    (timer,) = engine.start("e", {})
    assert isinstance(timer, TimerCall)
    with pytest.raises(ValueError):
        engine.task_succeeded(timer.token, 1)
    (call,) = engine.timer_fired(timer.token)
    assert isinstance(call, TaskCall)
    with pytest.raises(ValueError):
        engine.timer_fired(call.token)
