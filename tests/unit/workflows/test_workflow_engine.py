"""The step engine through its public API: actions, tokens, retries, fan-out, native graphs."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from sand_workflows import Workflow, load_workflow_text
from sand_workflows.engine import (
    Engine,
    Failed,
    Finished,
    InMemoryStore,
    TaskCall,
    TimerCall,
)
from sand_workflows.tokens import TokenKind, decode_token, encode_token


def wf(defn: dict[str, Any]) -> Workflow:
    return load_workflow_text(yaml.safe_dump(defn), source="t.yaml")


def only(actions: list[Any], kind: type) -> Any:
    assert len(actions) == 1 and isinstance(actions[0], kind), actions
    return actions[0]


TASK = {"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "g", "End": True}}}


def test_start_emits_task_call_with_context_and_default_timeout() -> None:
    """A Task becomes a TaskCall: grain, effective input, spec default timeout 60 s, context."""
    engine = Engine(wf(TASK), InMemoryStore())
    call = only(engine.start("e1", {"a": 1}, "2024-01-01T00:00:00Z"), TaskCall)
    assert (call.grain, call.input, call.timeout_s) == ("g", {"a": 1}, 60.0)
    assert call.context["Execution"] == {
        "Id": "e1",
        "Input": {"a": 1},
        "Name": "e1",
        "StartTime": "2024-01-01T00:00:00Z",
        "RedriveCount": 0,
    }
    assert call.context["State"]["Name"] == "T" and call.context["State"]["RetryCount"] == 0


def test_token_is_json_and_carries_the_continuation() -> None:
    """The token is a JSON string naming the state and the execution; it round-trips."""
    engine = Engine(wf(TASK), InMemoryStore())
    call = only(engine.start("e1", {"a": 1}), TaskCall)
    assert isinstance(json.loads(call.token), dict)
    token = decode_token(call.token)
    assert (token.kind, token.state, token.lineage.execution.id) == (TokenKind.TASK, "T", "e1")
    assert token.lineage.frames == ()
    assert encode_token(token) == call.token
    assert token.raw_input is None, "ResultPath $ and no Retry/Catch: the raw input is not carried"
    assert only(engine.task_succeeded(call.token, 5), Finished).output == 5


def test_token_carries_raw_input_only_when_needed() -> None:
    """With ResultPath into the input, the raw input travels in the token."""
    defn = {
        "StartAt": "T",
        "States": {"T": {"Type": "Task", "Resource": "g", "ResultPath": "$.r", "End": True}},
    }
    engine = Engine(wf(defn), InMemoryStore())
    call = only(engine.start("e1", {"a": 1}), TaskCall)
    assert decode_token(call.token).raw_input == {"a": 1}
    assert only(engine.task_succeeded(call.token, 2), Finished).output == {"a": 1, "r": 2}


def test_another_engine_instance_continues_from_token() -> None:
    """Any host with the same workflow and store can continue an execution from a token."""
    store = InMemoryStore()
    defn = {
        "StartAt": "P",
        "States": {
            "P": {
                "Type": "Parallel",
                "End": True,
                "Branches": [
                    {
                        "StartAt": "A",
                        "States": {"A": {"Type": "Task", "Resource": "g", "End": True}},
                    },
                    {
                        "StartAt": "B",
                        "States": {"B": {"Type": "Task", "Resource": "g", "End": True}},
                    },
                ],
            }
        },
    }
    w = wf(defn)
    a, b = Engine(w, store).start("e1", 0)
    assert Engine(w, store).task_succeeded(b.token, "b") == []
    assert only(Engine(w, store).task_succeeded(a.token, "a"), Finished).output == ["a", "b"]


def test_timeout_seconds_and_path_reach_task_call() -> None:
    """TimeoutSeconds and TimeoutSecondsPath set TaskCall.timeout_s."""
    fixed = {
        "StartAt": "T",
        "States": {"T": {"Type": "Task", "Resource": "g", "TimeoutSeconds": 7, "End": True}},
    }
    assert only(Engine(wf(fixed), InMemoryStore()).start("e", {}), TaskCall).timeout_s == 7
    by_path = {
        "StartAt": "T",
        "States": {
            "T": {"Type": "Task", "Resource": "g", "TimeoutSecondsPath": "$.t", "End": True}
        },
    }
    assert only(Engine(wf(by_path), InMemoryStore()).start("e", {"t": 3}), TaskCall).timeout_s == 3


def retry_machine(retrier: dict[str, Any]) -> Workflow:
    return wf(
        {
            "StartAt": "T",
            "States": {"T": {"Type": "Task", "Resource": "g", "End": True, "Retry": [retrier]}},
        }
    )


def collect_retry_delays(
    engine: Engine, error: str = "E", limit: int = 20
) -> tuple[list[float], Any]:
    call = only(engine.start("e", {}), TaskCall)
    delays = []
    for _ in range(limit):
        actions = engine.task_failed(call.token, error, "c")
        if not isinstance(actions[0], TimerCall):
            return delays, actions[0]
        delays.append(actions[0].delay_s)
        call = only(engine.timer_fired(actions[0].token), TaskCall)
        assert call.context["State"]["RetryCount"] == len(delays)
    raise AssertionError("retries never stopped")


def test_retry_delays_grow_by_backoff_rate_and_cap_at_max_delay() -> None:
    """Delay n is IntervalSeconds * BackoffRate^n capped by MaxDelaySeconds; then the error wins."""
    engine = Engine(
        retry_machine(
            {
                "ErrorEquals": ["E"],
                "IntervalSeconds": 3,
                "BackoffRate": 2,
                "MaxAttempts": 4,
                "MaxDelaySeconds": 10,
            }
        ),
        InMemoryStore(),
    )
    delays, final = collect_retry_delays(engine)
    assert delays == [3, 6, 10, 10]
    assert final == Failed("E", "c")


def test_retry_defaults() -> None:
    """Defaults: IntervalSeconds 1, BackoffRate 2.0, MaxAttempts 3."""
    delays, _ = collect_retry_delays(Engine(retry_machine({"ErrorEquals": ["E"]}), InMemoryStore()))
    assert delays == [1, 2, 4]


def test_spec_retry_example_with_max_delay() -> None:
    """Spec: interval 3, rate 2, 2 attempts, MaxDelaySeconds 4 -> waits 3 then 4."""
    engine = Engine(
        retry_machine(
            {
                "ErrorEquals": ["States.Timeout"],
                "IntervalSeconds": 3,
                "MaxAttempts": 2,
                "BackoffRate": 2.0,
                "MaxDelaySeconds": 4,
            }
        ),
        InMemoryStore(),
    )
    delays, _ = collect_retry_delays(engine, "States.Timeout")
    assert delays == [3, 4]


def test_full_jitter_stays_below_the_backoff_delay() -> None:
    """JitterStrategy FULL draws each delay in [0, IntervalSeconds * BackoffRate^n]."""
    engine = Engine(
        retry_machine(
            {"ErrorEquals": ["E"], "IntervalSeconds": 2, "MaxAttempts": 3, "JitterStrategy": "FULL"}
        ),
        InMemoryStore(),
        rng=random.Random(1),
    )
    delays, _ = collect_retry_delays(engine)
    assert len(delays) == 3
    assert all(0 <= d <= cap for d, cap in zip(delays, [2, 4, 8], strict=True))
    assert delays != [2, 4, 8]


def test_retry_max_attempts_zero_fails_at_once() -> None:
    """MaxAttempts 0: no TimerCall at all."""
    delays, final = collect_retry_delays(
        Engine(retry_machine({"ErrorEquals": ["E"], "MaxAttempts": 0}), InMemoryStore())
    )
    assert delays == [] and isinstance(final, Failed)


def test_states_all_matches_any_error_name_including_runtime() -> None:
    """Spec Appendix A: States.ALL matches any Error Name (SAND does not exempt States.Runtime)."""
    delays, _ = collect_retry_delays(
        Engine(retry_machine({"ErrorEquals": ["States.ALL"], "MaxAttempts": 1}), InMemoryStore()),
        "States.Runtime",
    )
    assert delays == [1]


def test_wait_seconds_and_timestamp_become_timers() -> None:
    """Wait never sleeps: Seconds and Timestamp (relative to the clock) become TimerCalls."""
    now = datetime(2024, 1, 1, 0, 0, 0, tzinfo=UTC)
    defn = {
        "StartAt": "W1",
        "States": {
            "W1": {"Type": "Wait", "Seconds": 30, "Next": "W2"},
            "W2": {"Type": "Wait", "Timestamp": "2024-01-01T00:01:30Z", "End": True},
        },
    }
    engine = Engine(wf(defn), InMemoryStore(), clock=lambda: now)
    t1 = only(engine.start("e", {"x": 1}), TimerCall)
    assert t1.delay_s == 30
    t2 = only(engine.timer_fired(t1.token), TimerCall)
    assert t2.delay_s == 90
    assert only(engine.timer_fired(t2.token), Finished).output == {"x": 1}


def map_machine(limit: int) -> Workflow:
    return wf(
        {
            "StartAt": "M",
            "States": {
                "M": {
                    "Type": "Map",
                    "MaxConcurrency": limit,
                    "End": True,
                    "ItemProcessor": {
                        "StartAt": "T",
                        "States": {"T": {"Type": "Task", "Resource": "g", "End": True}},
                    },
                }
            },
        }
    )


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_map_max_concurrency_bounds_outstanding_tasks(limit: int) -> None:
    """No more than MaxConcurrency TaskCalls are outstanding at any time; results keep order."""
    engine = Engine(map_machine(limit), InMemoryStore())
    items = list(range(7))
    outstanding = list(engine.start("e", items))
    peak = len(outstanding)
    result = None
    rng = random.Random(limit)
    while outstanding:
        call = outstanding.pop(rng.randrange(len(outstanding)))
        actions = engine.task_succeeded(call.token, call.input * 10)
        for action in actions:
            if isinstance(action, Finished):
                result = action.output
            else:
                outstanding.append(action)
        peak = max(peak, len(outstanding))
        assert len(outstanding) <= limit
    assert peak == limit
    assert result == [i * 10 for i in items]


def test_map_max_concurrency_zero_starts_everything() -> None:
    """MaxConcurrency 0 means no limit: every item starts at once."""
    assert len(Engine(map_machine(0), InMemoryStore()).start("e", list(range(5)))) == 5


def parallel_machine(**extra: Any) -> Workflow:
    branch = {"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "g", "End": True}}}
    branch2 = {"StartAt": "B", "States": {"B": {"Type": "Task", "Resource": "g", "End": True}}}
    return wf(
        {
            "StartAt": "P",
            "States": {
                "P": {"Type": "Parallel", "End": True, "Branches": [branch, branch2], **extra}
            },
        }
    )


def test_branch_failure_fails_parallel_and_late_results_are_ignored() -> None:
    """The first branch error fails the Parallel with that error; later reports give []."""
    engine = Engine(parallel_machine(), InMemoryStore())
    a, b = engine.start("e", {})
    assert only(engine.task_failed(a.token, "Boom", "a broke"), Failed) == Failed("Boom", "a broke")
    assert engine.task_succeeded(b.token, 1) == []
    assert engine.task_failed(b.token, "Other", "late") == []


def test_duplicate_branch_result_is_ignored() -> None:
    """A replayed task_succeeded for the same branch does not complete the group twice."""
    engine = Engine(parallel_machine(), InMemoryStore())
    a, b = engine.start("e", {})
    assert engine.task_succeeded(a.token, 1) == []
    assert engine.task_succeeded(a.token, 1) == []
    assert only(engine.task_succeeded(b.token, 2), Finished).output == [1, 2]
    assert engine.task_succeeded(b.token, 2) == []


def test_retry_of_parallel_restarts_all_branches_in_a_new_group() -> None:
    """Retry on a Parallel re-runs every branch; results of the failed attempt are ignored."""
    engine = Engine(
        parallel_machine(Retry=[{"ErrorEquals": ["Boom"], "MaxAttempts": 1}]), InMemoryStore()
    )
    a, b = engine.start("e", {})
    timer = only(engine.task_failed(a.token, "Boom", ""), TimerCall)
    a2, b2 = engine.timer_fired(timer.token)
    old_group = decode_token(a.token).lineage.frames[0].group_id
    new_group = decode_token(a2.token).lineage.frames[0].group_id
    assert old_group != new_group
    assert engine.task_succeeded(b.token, "stale") == []
    assert engine.task_succeeded(a2.token, "x") == []
    assert only(engine.task_succeeded(b2.token, "y"), Finished).output == ["x", "y"]


def test_catch_on_parallel_receives_branch_error() -> None:
    """A Catcher on the Parallel handles the branch's error name."""
    w = wf(
        {
            "StartAt": "P",
            "States": {
                "P": {
                    "Type": "Parallel",
                    "Next": "Done",
                    "Branches": [
                        {
                            "StartAt": "A",
                            "States": {"A": {"Type": "Task", "Resource": "g", "End": True}},
                        }
                    ],
                    "Catch": [{"ErrorEquals": ["Boom"], "ResultPath": "$.err", "Next": "Done"}],
                },
                "Done": {"Type": "Succeed"},
            },
        }
    )
    engine = Engine(w, InMemoryStore())
    (a,) = engine.start("e", {"in": 1})
    out = only(engine.task_failed(a.token, "Boom", "why"), Finished).output
    assert out == {"in": 1, "err": {"Error": "Boom", "Cause": "why"}}


def test_inline_loop_is_bounded() -> None:
    """A Pass/Choice loop that never reaches a task fails with States.Runtime, not a hang."""
    w = wf(
        {
            "StartAt": "C",
            "States": {
                "C": {
                    "Type": "Choice",
                    "Choices": [{"Variable": "$.stop", "BooleanEquals": True, "Next": "D"}],
                    "Default": "L",
                },
                "L": {"Type": "Pass", "Next": "C"},
                "D": {"Type": "Succeed"},
            },
        }
    )
    failed = only(
        Engine(w, InMemoryStore(), max_inline_steps=50).start("e", {"stop": False}), Failed
    )
    assert failed.error == "States.Runtime" and "50" in failed.cause


def test_malformed_token_is_rejected() -> None:
    """A token that is not ours raises ValueError."""
    engine = Engine(wf(TASK), InMemoryStore())
    with pytest.raises(ValueError):
        engine.task_succeeded("not json", 1)
    with pytest.raises(ValueError):
        engine.task_succeeded('{"v": 99}', 1)


# -- native ------------------------------------------------------------------------------
NATIVE = {
    "entry": "extract",
    "grains": {
        "extract": {"next": ["transform"]},
        "transform": {"next": ["tag", "thumb"], "timeoutSeconds": 5},
        "tag": {"next": ["merge"]},
        "thumb": {"next": ["merge"]},
        "merge": {"join": True},
    },
}


def test_native_fan_out_and_join() -> None:
    """next with several grains fans out; a join runs once with outputs ordered by predecessor."""
    engine = Engine(wf(NATIVE), InMemoryStore())
    extract = only(engine.start("e", 1), TaskCall)
    transform = only(engine.task_succeeded(extract.token, 2), TaskCall)
    assert transform.grain == "transform" and transform.timeout_s == 5
    tag, thumb = engine.task_succeeded(transform.token, 3)
    assert {tag.grain, thumb.grain} == {"tag", "thumb"}
    assert engine.task_succeeded(thumb.token, "th") == []
    merge = only(engine.task_succeeded(tag.token, "tg"), TaskCall)
    assert merge.grain == "merge" and merge.input == ["tg", "th"]
    assert only(engine.task_succeeded(merge.token, "done"), Finished).output == "done"


def test_native_failure_is_reported_once() -> None:
    """After a grain fails, other branches' reports of the same execution give []."""
    engine = Engine(wf(NATIVE), InMemoryStore())
    extract = only(engine.start("e", 1), TaskCall)
    transform = only(engine.task_succeeded(extract.token, 2), TaskCall)
    tag, thumb = engine.task_succeeded(transform.token, 3)
    assert only(engine.task_failed(tag.token, "Err", "x"), Failed) == Failed("Err", "x")
    assert engine.task_succeeded(thumb.token, "th") == []
    assert engine.task_failed(thumb.token, "Err2", "y") == []


DYNAMIC = {"entry": "route", "grains": {"route": {"potentialNext": ["a", "b"]}, "a": {}, "b": {}}}


def test_native_dynamic_next_runs_chosen_grain() -> None:
    """potentialNext: next_grains picks the successors at run time."""
    engine = Engine(wf(DYNAMIC), InMemoryStore())
    route = only(engine.start("e", 1), TaskCall)
    b = only(engine.task_succeeded(route.token, "x", next_grains=["b"]), TaskCall)
    assert (b.grain, b.input) == ("b", "x")


def test_native_dynamic_next_outside_potential_next_fails() -> None:
    """A chosen grain not in potentialNext fails with States.Runtime naming it."""
    engine = Engine(wf(DYNAMIC), InMemoryStore())
    route = only(engine.start("e", 1), TaskCall)
    failed = only(engine.task_succeeded(route.token, "x", next_grains=["c"]), Failed)
    assert failed.error == "States.Runtime" and "'c'" in failed.cause and "a, b" in failed.cause


def test_native_static_grain_rejects_next_grains() -> None:
    """next_grains for a grain without potentialNext is a States.Runtime failure."""
    engine = Engine(wf({"entry": "a", "grains": {"a": {"next": ["b"]}, "b": {}}}), InMemoryStore())
    a = only(engine.start("e", 1), TaskCall)
    assert (
        only(engine.task_succeeded(a.token, 1, next_grains=["b"]), Failed).error == "States.Runtime"
    )
