"""The engine's history events (decision 0018): every state type, paths, steps, bounds."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sand import timeline
from sand_workflows import history, load_workflow_text
from sand_workflows.driver import GrainContext, run
from sand_workflows.engine import Engine, Failed, Finished, InMemoryStore, Redrive, TaskCall


def _asl(states: dict[str, Any], start: str) -> Any:
    return load_workflow_text(json.dumps({"StartAt": start, "States": states}), source="h.json")


def _run(wf: Any, input: Any, grains: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    recorder = history.Recorder(host="h1")
    result = run(wf, input, grains, recorder=recorder)
    return result, recorder.events


def _types(events: list[dict[str, Any]]) -> list[tuple[str, str | None, str]]:
    return [(e["type"], e["state"], e["path"]) for e in events]


def test_task_pass_choice_succeed_in_order_with_processing_steps() -> None:
    wf = _asl(
        {
            "P": {"Type": "Pass", "Result": {"n": 2}, "ResultPath": "$.p", "Next": "T"},
            "T": {
                "Type": "Task",
                "Resource": "double",
                "InputPath": "$.p",
                "Parameters": {"v.$": "$.n"},
                "ResultSelector": {"r.$": "$.out"},
                "ResultPath": "$.t",
                "OutputPath": "$.t",
                "Next": "C",
            },
            "C": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.r", "NumericEquals": 4, "Next": "S"}],
            },
            "S": {"Type": "Succeed"},
        },
        "P",
    )
    result, events = _run(wf, {"a": 1}, {"double": lambda e, c: {"out": e["v"] * 2}})
    assert result == Finished({"r": 4})
    assert _types(events) == [
        ("ExecutionStarted", None, ""),
        ("StateEntered", "P", ""),
        ("StateExited", "P", ""),
        ("StateEntered", "T", ""),
        ("TaskScheduled", "T", ""),
        ("TaskStarted", "T", ""),
        ("TaskSucceeded", "T", ""),
        ("StateExited", "T", ""),
        ("StateEntered", "C", ""),
        ("StateExited", "C", ""),
        ("StateEntered", "S", ""),
        ("StateExited", "S", ""),
        ("ExecutionSucceeded", None, ""),
    ]
    by = {(e["type"], e["state"]): e for e in events}
    assert by[("ExecutionStarted", None)]["input"] == {"a": 1}
    assert by[("StateEntered", "T")]["input"] == {"a": 1, "p": {"n": 2}}
    scheduled = by[("TaskScheduled", "T")]
    assert scheduled["grain"] == "double" and scheduled["input"] == {"v": 2}
    assert scheduled["steps"] == {"input_path": {"n": 2}, "parameters": {"v": 2}}
    assert by[("TaskSucceeded", "T")]["output"] == {"out": 4}
    assert by[("StateExited", "T")]["steps"] == {
        "result": {"out": 4},
        "result_selector": {"r": 4},
        "result_path": {"a": 1, "p": {"n": 2}, "t": {"r": 4}},
        "output_path": {"r": 4},
    }
    assert by[("StateExited", "T")]["next"] == "C"
    assert by[("StateExited", "C")]["next"] == "S"
    assert by[("ExecutionSucceeded", None)]["output"] == {"r": 4}
    assert all(e["host"] == "h1" and e["execution_id"] == "exec-1" for e in events)
    assert all(e["type"] in history.TYPES for e in events)
    assert [e["at_ms"] for e in events] == sorted(e["at_ms"] for e in events)


def test_retry_then_catch_then_fail_state() -> None:
    wf = _asl(
        {
            "T": {
                "Type": "Task",
                "Resource": "boom",
                "Retry": [{"ErrorEquals": ["Boom"], "MaxAttempts": 1, "IntervalSeconds": 1}],
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "F"}],
                "End": True,
            },
            "F": {"Type": "Fail", "Error": "Final", "Cause": "gave up"},
        },
        "T",
    )

    class Boom(Exception):
        pass

    def boom(event: Any, ctx: GrainContext) -> Any:
        raise Boom("no")

    result, events = _run(wf, {}, {"boom": boom})
    assert result == Failed("Final", "gave up")
    types = [e["type"] for e in events]
    assert types == [
        "ExecutionStarted",
        "StateEntered",
        "TaskScheduled",
        "TaskStarted",
        "TaskFailed",
        "RetryScheduled",
        "StateEntered",
        "TaskScheduled",
        "TaskStarted",
        "TaskFailed",
        "Caught",
        "StateEntered",
        "StateFailed",
        "ExecutionFailed",
    ]
    retry = next(e for e in events if e["type"] == "RetryScheduled")
    assert (retry["error"], retry["delay_s"], retry["retry"]) == ("Boom", 1.0, 1)
    caught = next(e for e in events if e["type"] == "Caught")
    assert (caught["state"], caught["next"]) == ("T", "F")
    failed = [e for e in events if e["type"] == "TaskFailed"]
    assert all(e["error"] == "Boom" and e["cause"] == "no" for e in failed)
    assert all(isinstance(e["duration_ms"], int) for e in failed)
    assert events[-1]["error"] == "Final" and events[-1]["cause"] == "gave up"


def test_parallel_and_map_paths_and_branch_events() -> None:
    wf = _asl(
        {
            "Fan": {
                "Type": "Parallel",
                "Branches": [
                    {"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}},
                    {
                        "StartAt": "Each",
                        "States": {
                            "Each": {
                                "Type": "Map",
                                "ItemsPath": "$.xs",
                                "ItemProcessor": {
                                    "StartAt": "Inc",
                                    "States": {
                                        "Inc": {"Type": "Task", "Resource": "inc", "End": True}
                                    },
                                },
                                "End": True,
                            }
                        },
                    },
                ],
                "End": True,
            }
        },
        "Fan",
    )
    result, events = _run(wf, {"xs": [1, 2]}, {"inc": lambda e, c: e + 1})
    assert result == Finished([{"xs": [1, 2]}, [2, 3]])
    started = next(e for e in events if e["type"] == "ParallelStarted")
    assert (started["state"], started["branches"], started["path"]) == ("Fan", 2, "")
    mapped = next(e for e in events if e["type"] == "MapStarted")
    assert (mapped["state"], mapped["items"], mapped["path"]) == ("Each", 2, "Fan[1]")
    inner = {e["path"] for e in events if e["type"] == "TaskSucceeded"}
    assert inner == {"Fan[1]/Each[0]", "Fan[1]/Each[1]"}
    branches = [(e["path"], e["output"]) for e in events if e["type"] == "BranchSucceeded"]
    assert ("Fan[0]", {"xs": [1, 2]}) in branches
    assert ("Fan[1]/Each[0]", 2) in branches and ("Fan[1]", [2, 3]) in branches
    assert events[-2]["type"] == "StateExited" and events[-2]["state"] == "Fan"


def test_a_failed_branch_and_wait_events() -> None:
    wf = _asl(
        {
            "W": {"Type": "Wait", "Seconds": 5, "Next": "Fan"},
            "Fan": {
                "Type": "Parallel",
                "Branches": [
                    {"StartAt": "X", "States": {"X": {"Type": "Fail", "Error": "E"}}},
                ],
                "End": True,
            },
        },
        "W",
    )
    result, events = _run(wf, {}, {})
    assert result == Failed("E", "")
    types = _types(events)
    assert ("WaitStarted", "W", "") in types and ("WaitEnded", "W", "") in types
    assert next(e for e in events if e["type"] == "WaitStarted")["seconds"] == 5
    assert ("BranchFailed", None, "Fan[0]") in types
    assert ("StateFailed", "Fan", "") in types
    assert types[-1] == ("ExecutionFailed", None, "")


def test_native_workflow_events() -> None:
    wf = load_workflow_text("entry: a\ngrains: {a: {next: [b]}, b: {}}\n")
    result, events = _run(wf, 1, {"a": lambda e, c: e + 1, "b": lambda e, c: e * 10})
    assert result == Finished(20)
    assert [(e["type"], e["state"]) for e in events] == [
        ("ExecutionStarted", None),
        ("TaskScheduled", "a"),
        ("TaskStarted", "a"),
        ("TaskSucceeded", "a"),
        ("TaskScheduled", "b"),
        ("TaskStarted", "b"),
        ("TaskSucceeded", "b"),
        ("ExecutionSucceeded", None),
    ]


def test_nothing_is_recorded_without_a_recording() -> None:
    wf = _asl({"P": {"Type": "Pass", "End": True}}, "P")
    outside = history.Recorder()
    assert run(wf, 1, {}) == Finished(1)
    assert outside.events == [] and not history.active()


def test_large_values_are_truncated_with_a_mark() -> None:
    wf = _asl({"P": {"Type": "Pass", "End": True}}, "P")
    big = {"blob": "x" * 40_000}
    _, events = _run(wf, big, {})
    assert events[0]["input"] == big  # the recorder keeps values whole...
    recorded = json.loads(history.encode(events))  # ...the record bounds them
    started = recorded[0]["input"]
    assert started["truncated"] is True and started["bytes"] > 40_000
    assert started["preview"].startswith('{"blob":"xxx') and len(started["preview"]) == 1024
    assert history.bounded({"small": 1}) == {"small": 1}
    assert json.loads(history.encode(events[:1] and [{"type": "X", "input": 1}])) == [
        {"type": "X", "input": 1}
    ]


def test_path_survives_state_names_with_slashes_and_hashes() -> None:
    wf = _asl(
        {
            "a/b#c": {
                "Type": "Map",
                "ItemProcessor": {
                    "StartAt": "I",
                    "States": {"I": {"Type": "Pass", "End": True}},
                },
                "End": True,
            }
        },
        "a/b#c",
    )
    _, events = _run(wf, [7], {})
    assert {e["path"] for e in events if e["state"] == "I"} == {"a/b#c[0]"}


def test_redrive_starts_at_the_failed_state_with_the_original_execution() -> None:
    wf = _asl(
        {
            "A": {"Type": "Pass", "Result": "a", "ResultPath": "$.a", "Next": "B"},
            "B": {"Type": "Task", "Resource": "b", "End": True},
        },
        "A",
    )
    engine = Engine(wf, InMemoryStore())
    recorder = history.Recorder()
    with history.recording(recorder):
        actions = engine.start(
            "e1", {"orig": True}, "2026-01-01T00:00:00.000Z", redrive=Redrive("B", {"x": 1}, 2)
        )
    assert len(actions) == 1 and isinstance(actions[0], TaskCall)
    assert actions[0].input == {"x": 1}
    assert actions[0].context["Execution"]["Input"] == {"orig": True}
    redriven = recorder.events[0]
    assert redriven["type"] == "ExecutionRedriven"
    assert (redriven["from_state"], redriven["redrive_count"]) == ("B", 2)
    assert [e["type"] for e in recorder.events][1:] == ["StateEntered", "TaskScheduled"]


def test_redrive_refuses_an_inner_state_and_native_workflows() -> None:
    wf = _asl(
        {
            "M": {
                "Type": "Map",
                "ItemProcessor": {"StartAt": "I", "States": {"I": {"Type": "Pass", "End": True}}},
                "End": True,
            }
        },
        "M",
    )
    with pytest.raises(ValueError, match="no top-level state 'I'"):
        Engine(wf, InMemoryStore()).start("e", [], redrive=Redrive("I", 1, 1))
    native = load_workflow_text("entry: a\ngrains: {a: {}}\n")
    with pytest.raises(ValueError, match="native format"):
        Engine(native, InMemoryStore()).start("e", 1, redrive=Redrive("a", 1, 1))


def _fan_out(kind: str) -> Any:
    """Validate → a Map over ``items`` (or a Parallel of two branches) of task ``price`` →
    Total: the shape of issue 24's app, whose second redrive stalled."""

    def branch(name: str) -> dict[str, Any]:
        return {
            "StartAt": name,
            "States": {name: {"Type": "Task", "Resource": "price", "End": True}},
        }

    fan: dict[str, Any] = (
        {"Type": "Map", "ItemsPath": "$.items", "ItemProcessor": branch("Price"), "Next": "Total"}
        if kind == "Map"
        else {"Type": "Parallel", "Branches": [branch("Price"), branch("Again")], "Next": "Total"}
    )
    return _asl(
        {
            "Validate": {"Type": "Pass", "Next": "Fan"},
            "Fan": fan,
            "Total": {"Type": "Pass", "End": True},
        },
        "Validate",
    )


@pytest.mark.parametrize("kind", ["Map", "Parallel"])
def test_redrive_ofAFanOutFailure_secondAndThirdRedriveRunToTheirEnd(kind: str) -> None:
    """Each redrive is a run of its own: the groups of the run before it are closed, and a
    redrive that reused their ids (the entry count of a fresh run) waited for ever."""
    wf, store = _fan_out(kind), InMemoryStore()

    def broken(event: Any, context: Any) -> Any:
        if event in (2, {"items": [1, 2, 3]}):
            raise ValueError("no price")
        return event

    input = {"items": [1, 2, 3]}
    first = run(wf, input, {"price": broken}, store=store, execution_id="e")
    assert isinstance(first, Failed) and first.error == "ValueError"
    again = run(
        wf,
        input,
        {"price": broken},
        store=store,
        execution_id="e",
        redrive=Redrive("Fan", input, 1),
    )
    assert isinstance(again, Failed) and again.error == "ValueError"
    for count in (2, 3):
        recorder = history.Recorder()
        fixed = run(
            wf,
            input,
            {"price": lambda event, context: event},
            store=store,
            execution_id="e",
            redrive=Redrive("Fan", input, count),
            recorder=recorder,
        )
        expected = [1, 2, 3] if kind == "Map" else [input, input]
        assert fixed == Finished(expected), (count, fixed)
        redriven = recorder.events[0]
        assert (redriven["type"], redriven["redrive_count"]) == ("ExecutionRedriven", count)
        # paths stay the user's (``Fan[0]``), whatever the run's groups are named
        assert {e["path"] for e in recorder.events if e["state"] == "Price"} >= {"Fan[0]"}


def test_context_redriveCountAndTime_asStepFunctionsGivesThem() -> None:
    """``$$.Execution.RedriveCount`` is 0 in a run never redriven and N in the Nth redrive;
    ``RedriveTime`` is there only in a redrive."""
    wf = _asl(
        {
            "T": {
                "Type": "Task",
                "Resource": "t",
                "Parameters": {"e.$": "$$.Execution"},
                "End": True,
            }
        },
        "T",
    )
    seen: list[dict[str, Any]] = []

    def grain(event: Any, context: Any) -> Any:
        seen.append(event["e"])
        return 1

    run(wf, {}, {"t": grain})
    run(wf, {}, {"t": grain}, redrive=Redrive("T", {}, 2))
    assert seen[0]["RedriveCount"] == 0 and "RedriveTime" not in seen[0]
    assert seen[1]["RedriveCount"] == 2 and seen[1]["RedriveTime"].endswith("Z")


@pytest.mark.parametrize("max_concurrency", [0, 1, 2])
def test_redrive_ofAMap_runsOnlyTheItemsNotKept_andKeepsTheOthersOutputs(
    max_concurrency: int,
) -> None:
    """The service's RedriveExecution "redrives only the iterations and branches that failed
    or aborted": the items that succeeded keep their outputs and do not run again (with
    MaxConcurrency the claims that start the next item skip them too)."""
    wf = _asl(
        {
            "Each": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "MaxConcurrency": max_concurrency,
                "ItemProcessor": {
                    "StartAt": "Price",
                    "States": {"Price": {"Type": "Task", "Resource": "price", "End": True}},
                },
                "End": True,
            }
        },
        "Each",
    )
    ran: list[Any] = []

    def price(event: Any, context: Any) -> Any:
        ran.append(event)
        return f"{event}!"

    input = {"items": ["a", "b", "c", "d", "e"]}
    recorder = history.Recorder()
    kept = {0: "a-before", 2: "c-before", 9: "out of range"}
    result = run(
        wf, input, {"price": price}, redrive=Redrive("Each", input, 1, kept=kept), recorder=recorder
    )
    assert result == Finished(["a-before", "b!", "c-before", "d!", "e!"])
    assert sorted(ran) == ["b", "d", "e"]
    started = next(e for e in recorder.events if e["type"] == "MapStarted")
    assert started["kept"] == [0, 2]
    assert "kept[/dim] [0, 2]" in timeline.line(started, started["at_ms"])  # sand execution show
    assert {e["path"] for e in recorder.events if e["state"] == "Price"} == {
        "Each[1]",
        "Each[3]",
        "Each[4]",
    }


def test_redrive_ofAParallel_runsOnlyTheBranchesNotKept_andAllKeptEndsAtOnce() -> None:
    def branch(name: str) -> dict[str, Any]:
        return {"StartAt": name, "States": {name: {"Type": "Task", "Resource": name, "End": True}}}

    wf = _asl(
        {
            "Fan": {
                "Type": "Parallel",
                "Branches": [branch("one"), branch("two"), branch("three")],
                "Next": "Sum",
            },
            "Sum": {"Type": "Pass", "End": True},
        },
        "Fan",
    )
    ran: list[str] = []

    def grain(name: str) -> Any:
        return lambda event, context: ran.append(name) or name

    grains = {n: grain(n) for n in ("one", "two", "three")}
    result = run(wf, {}, grains, redrive=Redrive("Fan", {}, 1, kept={0: "kept-one"}))
    assert result == Finished(["kept-one", "two", "three"])
    assert sorted(ran) == ["three", "two"]
    ran.clear()
    every = {0: 1, 1: 2, 2: 3}
    assert run(wf, {}, grains, redrive=Redrive("Fan", {}, 2, kept=every)) == Finished([1, 2, 3])
    assert ran == []


def test_redrive_keptOutputs_ofAStateThatIsNoFanOut_areIgnored() -> None:
    wf = _asl({"T": {"Type": "Task", "Resource": "t", "End": True}}, "T")
    result = run(wf, 5, {"t": lambda e, c: e + 1}, redrive=Redrive("T", 5, 1, kept={0: 9}))
    assert result == Finished(6)
