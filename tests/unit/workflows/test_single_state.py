"""One-state testing on the engine (``sand_workflows.single_state``): each state type stops
at its first hand-over, and the inspection holds exactly the steps that happened."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sand_workflows import load_workflow_text
from sand_workflows.actions import TaskCall
from sand_workflows.errors import StatesError
from sand_workflows.single_state import StateContext, StateTestError, TestStatus, run_state

DEFINITION: dict[str, Any] = {
    "StartAt": "Shape",
    "States": {
        "Shape": {
            "Type": "Pass",
            "Parameters": {"x.$": "$.a"},
            "ResultPath": "$.r",
            "OutputPath": "$.r",
            "Next": "Call",
        },
        "Call": {
            "Type": "Task",
            "Resource": "work",
            "InputPath": "$.job",
            "ResultSelector": {"v.$": "$.value"},
            "ResultPath": "$.out",
            "Retry": [{"ErrorEquals": ["Busy"], "MaxAttempts": 1}],
            "Catch": [{"ErrorEquals": ["Broken"], "ResultPath": "$.error", "Next": "Repair"}],
            "Next": "Route",
        },
        "Route": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.v", "NumericGreaterThan": 1, "Next": "Big"}],
            "Default": "Repair",
        },
        "Big": {
            "Type": "Map",
            "ItemsPath": "$.items",
            "ItemProcessor": {
                "StartAt": "Inner",
                "States": {"Inner": {"Type": "Task", "Resource": "work", "End": True}},
            },
            "ResultSelector": {"count.$": "States.ArrayLength($)"},
            "End": True,
        },
        "Repair": {"Type": "Fail", "Error": "Unrepairable", "Cause": "sorry"},
    },
}
WF = load_workflow_text(json.dumps(DEFINITION), source="t.json", grains={"work"})


def returning(value: Any) -> Any:
    return lambda call: value


def raising(error: str, cause: str) -> Any:
    def answer(call: TaskCall) -> Any:
        raise StatesError(error, cause)

    return answer


def test_pass_parametersResultPathOutputPath_everyStepInspected() -> None:
    """A Pass hands its output to its Next; each processing step's value is shown."""
    result = run_state(WF, "Shape", {"a": 1})
    assert (result.status, result.next_state, result.output) == (
        TestStatus.SUCCEEDED,
        "Call",
        {"x": 1},
    )
    assert result.inspection.to_json() == {
        "input": {"a": 1},
        "after_input_path": {"a": 1},
        "after_parameters": {"x": 1},
        "after_result_path": {"a": 1, "r": {"x": 1}},
        "output": {"x": 1},
    }


def test_task_mockedResult_resultSelectorAndResultPath() -> None:
    """A Task's result goes through ResultSelector and ResultPath; the grain saw InputPath."""
    seen: list[Any] = []

    def answer(call: TaskCall) -> Any:
        seen.append(call.input)
        return {"value": 5, "noise": True}

    result = run_state(WF, "Call", {"job": {"n": 2}}, answer=answer)
    assert seen == [{"n": 2}]
    assert result.status == TestStatus.SUCCEEDED and result.next_state == "Route"
    assert result.output == {"job": {"n": 2}, "out": {"v": 5}}
    assert result.inspection.to_json() == {
        "input": {"job": {"n": 2}},
        "after_input_path": {"n": 2},
        "result": {"value": 5, "noise": True},
        "after_result_selector": {"v": 5},
        "after_result_path": {"job": {"n": 2}, "out": {"v": 5}},
        "output": {"job": {"n": 2}, "out": {"v": 5}},
    }


def test_task_caughtError_nextStateIsTheCatchersNext() -> None:
    """An error a Catcher takes ends as CAUGHT_ERROR with the error output placed."""
    result = run_state(WF, "Call", {"job": {}}, answer=raising("Broken", "no disk"))
    assert result.status == TestStatus.CAUGHT_ERROR
    assert (result.error, result.cause, result.next_state) == ("Broken", "no disk", "Repair")
    assert result.output == {"job": {}, "error": {"Error": "Broken", "Cause": "no disk"}}
    assert "result" not in result.inspection


def test_task_retriableError_stopsBeforeTheRetry() -> None:
    """An error a Retrier would retry ends as RETRIABLE: the grain ran once."""
    calls: list[Any] = []

    def busy(call: TaskCall) -> Any:
        calls.append(call)
        raise StatesError("Busy", "later")

    result = run_state(WF, "Call", {"job": {}}, answer=busy)
    assert result.status == TestStatus.RETRIABLE
    assert (result.error, result.cause, result.next_state) == ("Busy", "later", None)
    assert len(calls) == 1


def test_task_unhandledError_failed() -> None:
    """An error neither Retry nor Catch takes ends as FAILED."""
    result = run_state(WF, "Call", {"job": {}}, answer=raising("Other", "x"))
    assert (result.status, result.error, result.cause) == (TestStatus.FAILED, "Other", "x")
    assert result.to_json()["status"] == "FAILED" and "output" not in result.to_json()


@pytest.mark.parametrize(("v", "target"), [(2, "Big"), (0, "Repair")])
def test_choice_nextStateIsTheMatchingRuleOrDefault(v: int, target: str) -> None:
    """A Choice hands its input over to the rule's Next, or to its Default."""
    result = run_state(WF, "Route", {"v": v})
    assert (result.status, result.next_state, result.output) == (
        TestStatus.SUCCEEDED,
        target,
        {"v": v},
    )


def test_fail_failedWithErrorAndCause() -> None:
    """A Fail state ends as FAILED with its error and cause."""
    result = run_state(WF, "Repair", {})
    assert (result.status, result.error, result.cause) == (
        TestStatus.FAILED,
        "Unrepairable",
        "sorry",
    )
    assert result.inspection.to_json() == {"input": {}}


def test_map_innerTasksRun_resultIsEveryItemsOutput() -> None:
    """A Map runs its items with the normal engine; its result is every item's output."""
    result = run_state(WF, "Big", {"items": [1, 2, 3]}, answer=lambda call: call.input * 10)
    assert (result.status, result.next_state, result.output) == (
        TestStatus.SUCCEEDED,
        None,
        {"count": 3},
    )
    assert result.inspection["result"] == [10, 20, 30]
    assert result.inspection["after_input_path"] == {"items": [1, 2, 3]}
    assert result.inspection["after_result_selector"] == {"count": 3}


def test_nestedState_runsAsAFreshThread() -> None:
    """A state inside a Map's processor runs alone; its End ends the test."""
    result = run_state(WF, "Inner", 4, answer=lambda call: call.input + 1)
    assert (result.status, result.output, result.next_state) == (TestStatus.SUCCEEDED, 5, None)


def test_variablesAndContext_visibleToTheState() -> None:
    """Variables given at entry are visible ($x), and $$.Execution is the context given;
    an Assign shows every visible variable after it."""
    definition = {
        "StartAt": "Init",
        "States": {
            "Init": {"Type": "Pass", "Assign": {"x": 0}, "Next": "P"},
            "P": {
                "Type": "Pass",
                "Parameters": {"x.$": "$x", "id.$": "$$.Execution.Id"},
                "Assign": {"y.$": "$.id"},
                "End": True,
            },
        },
    }
    wf = load_workflow_text(json.dumps(definition), source="v.json")
    result = run_state(
        wf, "P", {"a": 7}, variables={"x": 1}, context=StateContext(execution_id="ex-9")
    )
    assert result.output == {"x": 1, "id": "ex-9"}
    assert result.inspection["variables"] == {"x": 1, "y": "ex-9"}


def test_jsonataTask_showsArguments() -> None:
    """A JSONata Task's inspection has after_arguments (not after_parameters)."""
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "T",
        "States": {
            "T": {
                "Type": "Task",
                "Resource": "work",
                "Arguments": {"n": "{% $states.input.a + 1 %}"},
                "Output": {"got": "{% $states.result %}"},
                "End": True,
            }
        },
    }
    wf = load_workflow_text(json.dumps(definition), source="j.json", grains={"work"})
    result = run_state(wf, "T", {"a": 1}, answer=lambda call: call.input["n"] * 2)
    assert result.output == {"got": 4}
    inspection = result.inspection.to_json()
    assert inspection["after_arguments"] == {"n": 2}
    assert inspection["result"] == 4 and inspection["output"] == {"got": 4}
    assert "after_parameters" not in inspection


def test_unknownState_listsTheStates() -> None:
    """An unknown state is refused with the workflow's states."""
    with pytest.raises(StateTestError, match=r"no state 'Nope' \(its states: Big, Call, Inner"):
        run_state(WF, "Nope", {})


def test_nativeWorkflow_refused() -> None:
    """Native workflows have no states to test alone."""
    wf = load_workflow_text("entry: a\ngrains:\n  a: {}\n", source="n.yaml", grains={"a"})
    with pytest.raises(StateTestError, match="native format: one-state testing runs ASL"):
        run_state(wf, "a", {})


def test_badVariableName_refused() -> None:
    """A variable name that breaks the naming rule is refused before the state runs."""
    with pytest.raises(StateTestError, match="'1x' is not a valid variable name"):
        run_state(WF, "Shape", {}, variables={"1x": 1})


def test_catcherAssign_variablesShownForCaughtError() -> None:
    """A Catcher's Assign takes effect on the way to its Next: the inspection shows the
    variables after it."""
    definition = {
        "StartAt": "T",
        "States": {
            "T": {
                "Type": "Task",
                "Resource": "work",
                "Catch": [
                    {
                        "ErrorEquals": ["States.ALL"],
                        "Assign": {"failure.$": "$.Error"},
                        "Next": "After",
                    }
                ],
                "End": True,
            },
            "After": {"Type": "Pass", "End": True},
        },
    }
    wf = load_workflow_text(json.dumps(definition), source="c.json", grains={"work"})
    result = run_state(wf, "T", {}, variables={"kept": 1}, answer=raising("Oops", "c"))
    assert (result.status, result.next_state) == (TestStatus.CAUGHT_ERROR, "After")
    assert result.inspection["variables"] == {"kept": 1, "failure": "Oops"}


def test_wait_firesAtOnce_handsOverToNext() -> None:
    """A Wait's timer fires at once in-process; the state hands its input to its Next."""
    definition = {
        "StartAt": "Pause",
        "States": {
            "Pause": {"Type": "Wait", "Seconds": 3600, "OutputPath": "$.keep", "Next": "Go"},
            "Go": {"Type": "Succeed"},
        },
    }
    wf = load_workflow_text(json.dumps(definition), source="w.json")
    result = run_state(wf, "Pause", {"keep": 1, "drop": 2})
    assert (result.status, result.next_state, result.output) == (TestStatus.SUCCEEDED, "Go", 1)
