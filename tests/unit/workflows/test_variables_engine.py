"""Variables and JSONata inside the engine (decision 0020): what travels in tokens, what
the history records, the run-time limits, and JSONata evaluation from many threads."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from sand import timeline
from sand_workflows import history, load_workflow_text
from sand_workflows.driver import run
from sand_workflows.engine import Engine, Failed, Finished, InMemoryStore, Redrive, TaskCall
from sand_workflows.jsonata_lang import Template
from sand_workflows.tokens import (
    Execution,
    Lineage,
    Token,
    TokenKind,
    decode_token,
    encode_token,
)


def _wf(defn: dict[str, Any]) -> Any:
    return load_workflow_text(json.dumps(defn), source="v.json")


def test_token_carries_variables_and_omits_them_when_empty() -> None:
    lin = Lineage(Execution("x", {}, "2024-01-01T00:00:00.000Z"), variables={"a": [1, None]})
    token = Token(kind=TokenKind.TASK, state="T", lineage=lin)
    assert decode_token(encode_token(token)) == token
    plain = Token(kind=TokenKind.TASK, state="T", lineage=Lineage(lin.execution))
    assert '"var"' not in encode_token(plain)


def test_variables_survive_a_task_round_trip_through_the_token() -> None:
    """The engine keeps nothing between calls: the variables a Task's successor reads must
    come back in the token the TaskCall carried."""
    wf = _wf(
        {
            "StartAt": "Init",
            "States": {
                "Init": {"Type": "Pass", "Assign": {"k": "kept"}, "Next": "T"},
                "T": {"Type": "Task", "Resource": "g", "Next": "Show"},
                "Show": {"Type": "Pass", "Parameters": {"k.$": "$k"}, "End": True},
            },
        }
    )
    actions = Engine(wf, InMemoryStore()).start("x", {})
    call = actions[0]
    assert isinstance(call, TaskCall)
    assert decode_token(call.token).lineage.variables == {"k": "kept"}
    # The grain gets $$ as plain JSON: no variables ride along to it.
    assert type(call.context) is dict
    fresh = Engine(wf, InMemoryStore())  # another host: nothing shared but the token
    assert fresh.task_succeeded(call.token, {}) == [Finished({"k": "kept"})]


def test_history_records_variables_after_assign_and_at_entry() -> None:
    wf = _wf(
        {
            "StartAt": "A",
            "States": {
                "A": {"Type": "Pass", "Assign": {"n": 1}, "Next": "B"},
                "B": {"Type": "Pass", "Assign": {"n.$": "States.MathAdd($n, 1)"}, "End": True},
            },
        }
    )
    recorder = history.Recorder(host="h")
    assert run(wf, {}, {}, recorder=recorder) == Finished({})
    exited = [e for e in recorder.events if e["type"] == "StateExited"]
    assert [e["steps"]["variables"] for e in exited] == [{"n": 1}, {"n": 2}]
    entered_b = next(
        e for e in recorder.events if e["type"] == "StateEntered" and e["state"] == "B"
    )
    assert entered_b["variables"] == {"n": 1}
    shown = timeline.line(exited[1], exited[1]["at_ms"])
    assert 'vars[/dim] {"n":2}' in shown


def test_jsonata_steps_are_recorded() -> None:
    wf = _wf(
        {
            "QueryLanguage": "JSONata",
            "StartAt": "T",
            "States": {
                "T": {
                    "Type": "Task",
                    "Resource": "g",
                    "Arguments": "{% $states.input.v * 2 %}",
                    "Output": "{% {'r': $states.result} %}",
                    "End": True,
                }
            },
        }
    )
    recorder = history.Recorder(host="h")
    result = run(wf, {"v": 3}, {"g": lambda e, c: e + 1}, recorder=recorder)
    assert result == Finished({"r": 7})
    scheduled = next(e for e in recorder.events if e["type"] == "TaskScheduled")
    assert scheduled["steps"] == {"arguments": 6}
    exited = next(e for e in recorder.events if e["type"] == "StateExited")
    assert exited["steps"] == {"result": 7, "output": {"r": 7}}


def test_assign_over_the_size_limit_fails_the_state() -> None:
    wf = _wf(
        {
            "StartAt": "A",
            "States": {"A": {"Type": "Pass", "Assign": {"big.$": "$.blob"}, "End": True}},
        }
    )
    result = run(wf, {"blob": "x" * 300_000}, {})
    assert isinstance(result, Failed)
    assert result.error == "States.Runtime"
    assert "'big' is 300002 bytes" in result.cause


def test_redrive_restores_variables() -> None:
    wf = _wf(
        {
            "StartAt": "A",
            "States": {
                "A": {"Type": "Pass", "Assign": {"seen": "a"}, "Next": "B"},
                "B": {"Type": "Pass", "Parameters": {"seen.$": "$seen"}, "End": True},
            },
        }
    )
    engine = Engine(wf, InMemoryStore())
    actions = engine.start("x", {}, redrive=Redrive("B", {}, 1, {"seen": "before"}))
    assert actions == [Finished({"seen": "before"})]


def test_jsonata_evaluates_from_many_threads() -> None:
    """Parsed expressions are per thread: jsonata-python keeps evaluation state on them."""
    template = Template.of({"v": "{% $states.input.n * $k %}"})
    failures: list[Any] = []

    def work(n: int) -> None:
        for _ in range(200):
            got = template.evaluate("S", "Output", {"input": {"n": n}}, {"k": 3})
            if got != {"v": n * 3}:
                failures.append((n, got))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("{% $states.input.a.b() %}", "failed"),
        ("{% ($f := function($n) { 1 + $f($n + 1) }; $f(0)) %}", "failed"),
        ("{% $number('nope') %}", "failed"),
    ],
)
def test_jsonata_failures_are_query_evaluation_errors(expression: str, fragment: str) -> None:
    wf = _wf(
        {
            "QueryLanguage": "JSONata",
            "StartAt": "P",
            "States": {"P": {"Type": "Pass", "Output": expression, "End": True}},
        }
    )
    result = run(wf, {"a": {"b": 1}}, {})
    assert isinstance(result, Failed)
    assert result.error == "States.QueryEvaluationError"
    assert "state 'P' field 'Output'" in result.cause and fragment in result.cause


def test_jsonata_time_limit_counts_per_evaluation(monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit runs from each evaluation's start, not from when the expression was parsed
    (parsed expressions are cached for the life of the process), and a failed evaluation
    leaves nothing behind for the next one."""
    from jsonata import timebox

    template = Template.of("{% $states.input.n + 1 %}")
    assert template.evaluate("S", "Output", {"input": {"n": 1}}, {}) == 2
    real = timebox.Timebox.current_milli_time
    monkeypatch.setattr(
        timebox.Timebox, "current_milli_time", staticmethod(lambda: real() + 60_000)
    )
    assert template.evaluate("S", "Output", {"input": {"n": 2}}, {}) == 3
    deep = Template.of("{% ($f := function($n) { 1 + $f($n + 1) }; $f(0)) %}")
    with pytest.raises(Exception, match="QueryEvaluationError|failed"):
        deep.evaluate("S", "Output", {"input": {}}, {})
    with pytest.raises(Exception, match="failed"):
        deep.evaluate("S", "Output", {"input": {}}, {})
    assert template.evaluate("S", "Output", {"input": {"n": 3}}, {}) == 4


def test_catcher_assign_is_recorded_on_the_caught_event() -> None:
    wf = _wf(
        {
            "StartAt": "T",
            "States": {
                "T": {
                    "Type": "Task",
                    "Resource": "g",
                    "Catch": [
                        {"ErrorEquals": ["States.ALL"], "Assign": {"e.$": "$.Error"}, "Next": "N"}
                    ],
                    "End": True,
                },
                "N": {"Type": "Pass", "End": True},
            },
        }
    )

    def fail(event: Any, context: Any) -> Any:
        raise ValueError("no")

    recorder = history.Recorder(host="h")
    run(wf, {}, {"g": fail}, recorder=recorder)
    caught = next(e for e in recorder.events if e["type"] == "Caught")
    assert caught["steps"] == {"variables": {"e": "ValueError"}}
    exited = next(e for e in recorder.events if e["type"] == "StateExited")
    assert "variables" not in exited.get("steps", {})


def test_jsonata_odd_values_fail_the_field_not_the_engine() -> None:
    """A function as a result, or an input nested beyond the interpreter's stack, is a
    States.QueryEvaluationError naming the state and field (never an exception escaping
    the engine)."""
    from sand_workflows.errors import StatesError

    function = Template.of("{% function($x) { $x } %}")
    with pytest.raises(StatesError, match="state 'S' field 'Output'") as info:
        function.evaluate("S", "Output", {"input": {}}, {})
    assert info.value.error == "States.QueryEvaluationError"
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    nested = Template.of("{% $states.input %}")
    with pytest.raises(StatesError) as info:
        nested.evaluate("S", "Output", {"input": deep}, {})
    assert info.value.error == "States.QueryEvaluationError"
    assert Template.of({"a": [1, "x"]}).literal


def test_wait_steps_go_with_wait_started_not_the_next_state() -> None:
    wf = _wf(
        {
            "StartAt": "W",
            "States": {
                "W": {"Type": "Wait", "Seconds": 0, "Assign": {"w": 1}, "Next": "P"},
                "P": {"Type": "Pass", "Result": 2, "End": True},
            },
        }
    )
    recorder = history.Recorder(host="h")
    assert run(wf, {"a": 1}, {}, recorder=recorder) == Finished(2)
    started = next(e for e in recorder.events if e["type"] == "WaitStarted")
    assert started["steps"] == {
        "input_path": {"a": 1},
        "variables": {"w": 1},
        "output_path": {"a": 1},
    }
    exited_p = [e for e in recorder.events if e["type"] == "StateExited" and e["state"] == "P"]
    assert "variables" not in exited_p[0].get("steps", {})
