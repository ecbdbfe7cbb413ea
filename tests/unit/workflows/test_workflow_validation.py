"""Validation: every rule broken is reported with its location and the rule's name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from sand_workflows import (
    Problem,
    WorkflowError,
    load_workflow,
    load_workflow_text,
    validate_workflow,
)


def problems(defn: Any, grains: set[str] | None = None) -> list[Problem]:
    try:
        load_workflow_text(yaml.safe_dump(defn), source="main.yaml", grains=grains)
    except WorkflowError as exc:
        return exc.problems
    return []


def assert_problem(found: list[Problem], location: str, fragment: str) -> None:
    assert any(p.location == location and fragment in p.message for p in found), "\n".join(
        map(str, found)
    )


def machine(**states: Any) -> dict[str, Any]:
    return {"StartAt": next(iter(states)), "States": states}


END = {"Type": "Succeed"}


def test_valid_definition_has_no_problems() -> None:
    """A correct machine loads; validate_workflow returns []."""
    defn = machine(A={"Type": "Task", "Resource": "g", "Next": "B"}, B=END)
    assert problems(defn, {"g"}) == []


@pytest.mark.parametrize(
    ("defn", "location", "fragment"),
    [
        (
            machine(A={"Type": "Pass", "Next": "Nope"}),
            "main.yaml: States.A.Next",
            "Next 'Nope' names no state",
        ),
        (machine(A={"Type": "Pass", "End": True}, B=END), "main.yaml: States.B", "unreachable"),
        (machine(A={"Type": "Pass"}), "main.yaml: States.A", "must have 'Next' or 'End': true"),
        (
            machine(A={"Type": "Pass", "Next": "B", "End": True}, B=END),
            "main.yaml: States.A",
            "both 'Next' and 'End'",
        ),
        (
            machine(A={"Type": "Choice", "Default": "B"}, B=END),
            "main.yaml: States.A",
            "must have 'Choices'",
        ),
        (
            machine(
                A={
                    "Type": "Choice",
                    "Choices": [
                        {"Variable": "$.x", "IsNull": True, "Next": "B"},
                        {"Variable": "$.x", "IsNull": False},
                    ],
                },
                B=END,
            ),
            "main.yaml: States.A.Choices[1]",
            "top-level Choice Rule must have 'Next'",
        ),
        (
            machine(
                A={"Type": "Choice", "Choices": [{"Variable": "$.x", "IsNull": True, "Next": "Z"}]},
                B=END,
            ),
            "main.yaml: States.A.Choices[0].Next",
            "names no state",
        ),
        (
            machine(
                A={
                    "Type": "Choice",
                    "Choices": [{"Variable": "$.x", "IsNull": True, "Next": "A"}],
                    "End": True,
                }
            ),
            "main.yaml: States.A.End",
            "unknown field 'End' in a Choice state",
        ),
        (
            machine(A={"Type": "Loop", "End": True}),
            "main.yaml: States.A.Type",
            "unknown state Type 'Loop'",
        ),
        (machine(A={"End": True}), "main.yaml: States.A.Type", "must have a 'Type'"),
        (
            machine(A={"Type": {"not": "a name"}, "End": True}),
            "main.yaml: States.A.Type",
            "unknown state Type {'not': 'a name'}",
        ),
        (
            machine(A={"Type": "Pass", "End": True, "Reslt": 1}),
            "main.yaml: States.A.Reslt",
            "unknown field 'Reslt' in a Pass state",
        ),
        (
            machine(A={"Type": "Succeed", "ResultPath": "$.x"}),
            "main.yaml: States.A.ResultPath",
            "unknown field",
        ),
        (
            machine(A={"Type": "Pass", "End": True, "InputPath": "$.a[?(@.b >]"}),
            "main.yaml: States.A.InputPath",
            "not a valid JSONPath",
        ),
        (
            machine(A={"Type": "Pass", "End": True, "OutputPath": "a.b"}),
            "main.yaml: States.A.OutputPath",
            "must begin with '$'",
        ),
        (
            machine(A={"Type": "Pass", "End": True, "ResultPath": "$.a[*]"}),
            "main.yaml: States.A.ResultPath",
            "must be a reference path",
        ),
        (
            machine(A={"Type": "Pass", "End": True, "ResultPath": "$$.x"}),
            "main.yaml: States.A.ResultPath",
            "must not begin with '$$'",
        ),
        (
            machine(A={"Type": "Pass", "End": True, "Parameters": {"x.$": "States.Nope($.a)"}}),
            "main.yaml: States.A.Parameters.x.$",
            "unknown intrinsic function 'States.Nope'",
        ),
        (
            machine(A={"Type": "Pass", "End": True, "Parameters": {"x.$": "States.MathAdd(1)"}}),
            "main.yaml: States.A.Parameters.x.$",
            "takes 2 argument(s), got 1",
        ),
        (
            machine(A={"Type": "Pass", "End": True, "Parameters": {"x.$": "$.a[?(@.b >]"}}),
            "main.yaml: States.A.Parameters.x.$",
            "not a valid JSONPath",
        ),
        (
            machine(A={"Type": "Pass", "End": True, "Parameters": {"x.$": 5}}),
            "main.yaml: States.A.Parameters.x.$",
            "must be a Path or intrinsic function",
        ),
        (
            machine(A={"Type": "Pass", "End": True, "Parameters": {"x": 1, "x.$": "$.a"}}),
            "main.yaml: States.A.Parameters.x.$",
            "duplicate field 'x'",
        ),
        (
            machine(
                A={"Type": "Pass", "End": True, "Parameters": {"deep": [{"y.$": "States.UUID(1)"}]}}
            ),
            "main.yaml: States.A.Parameters.deep[0].y.$",
            "takes 0 argument(s)",
        ),
        (
            machine(A={"Type": "Pass", "End": True, "Parameters": [1]}),
            "main.yaml: States.A.Parameters",
            "must be an object",
        ),
        (
            machine(A={"Type": "Wait", "Seconds": 1, "SecondsPath": "$.s", "End": True}),
            "main.yaml: States.A",
            "exactly one of Seconds, SecondsPath",
        ),
        (machine(A={"Type": "Wait", "End": True}), "main.yaml: States.A", "exactly one of"),
        (
            machine(A={"Type": "Wait", "Seconds": -1, "End": True}),
            "main.yaml: States.A.Seconds",
            "non-negative integer",
        ),
        (
            machine(A={"Type": "Wait", "Timestamp": "tomorrow", "End": True}),
            "main.yaml: States.A.Timestamp",
            "RFC 3339",
        ),
        (
            machine(A={"Type": "Wait", "SecondsPath": "$.a[*]", "End": True}),
            "main.yaml: States.A.SecondsPath",
            "reference path",
        ),
        (
            machine(A={"Type": "Fail", "Error": "E", "ErrorPath": "$.e"}),
            "main.yaml: States.A",
            "both 'Error' and 'ErrorPath'",
        ),
        (
            machine(A={"Type": "Fail", "CausePath": "States.Bogus()"}),
            "main.yaml: States.A.CausePath",
            "unknown intrinsic",
        ),
        (machine(A={"Type": "Fail", "Error": 5}), "main.yaml: States.A.Error", "must be a string"),
        (machine(A={"Type": "Task", "End": True}), "main.yaml: States.A", "must have 'Resource'"),
        (
            machine(A={"Type": "Task", "Resource": "g", "End": True, "TimeoutSeconds": 0}),
            "main.yaml: States.A.TimeoutSeconds",
            "positive integer",
        ),
        (
            machine(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "End": True,
                    "TimeoutSeconds": 5,
                    "TimeoutSecondsPath": "$.t",
                }
            ),
            "main.yaml: States.A",
            "both 'TimeoutSeconds' and 'TimeoutSecondsPath'",
        ),
        (
            machine(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "End": True,
                    "TimeoutSeconds": 5,
                    "HeartbeatSeconds": 5,
                }
            ),
            "main.yaml: States.A.HeartbeatSeconds",
            "smaller than TimeoutSeconds",
        ),
        (
            machine(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "End": True,
                    "Retry": [{"ErrorEquals": ["States.ALL"]}, {"ErrorEquals": ["E"]}],
                }
            ),
            "main.yaml: States.A.Retry[0]",
            "must be the last Retrier",
        ),
        (
            machine(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "End": True,
                    "Retry": [{"ErrorEquals": ["States.ALL", "E"]}],
                }
            ),
            "main.yaml: States.A.Retry[0].ErrorEquals",
            "must appear alone",
        ),
        (
            machine(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "End": True,
                    "Retry": [{"ErrorEquals": ["E"], "MaxAttempts": -1}],
                }
            ),
            "main.yaml: States.A.Retry[0].MaxAttempts",
            "non-negative integer, got -1",
        ),
        (
            machine(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "End": True,
                    "Retry": [{"ErrorEquals": ["E"], "IntervalSeconds": 0}],
                }
            ),
            "main.yaml: States.A.Retry[0].IntervalSeconds",
            "positive integer",
        ),
        (
            machine(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "End": True,
                    "Retry": [{"ErrorEquals": ["E"], "BackoffRate": 0.5}],
                }
            ),
            "main.yaml: States.A.Retry[0].BackoffRate",
            ">= 1.0",
        ),
        (
            machine(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "End": True,
                    "Retry": [{"ErrorEquals": ["E"], "MaxDelaySeconds": 0}],
                }
            ),
            "main.yaml: States.A.Retry[0].MaxDelaySeconds",
            "positive integer",
        ),
        (
            machine(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "End": True,
                    "Retry": [{"ErrorEquals": ["E"], "JitterStrategy": "HALF"}],
                }
            ),
            "main.yaml: States.A.Retry[0].JitterStrategy",
            "FULL, NONE",
        ),
        (
            machine(
                A={"Type": "Task", "Resource": "g", "End": True, "Retry": [{"ErrorEquals": []}]}
            ),
            "main.yaml: States.A.Retry[0].ErrorEquals",
            "non-empty array",
        ),
        (
            machine(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "End": True,
                    "Retry": [{"ErrorEquals": ["States.Bogus"]}],
                }
            ),
            "main.yaml: States.A.Retry[0].ErrorEquals",
            "unknown error name 'States.Bogus'",
        ),
        (
            machine(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "End": True,
                    "Retry": [{"ErrorEquals": ["E"], "Max": 1}],
                }
            ),
            "main.yaml: States.A.Retry[0]",
            "unknown field 'Max' in a Retrier",
        ),
        (
            machine(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "Next": "B",
                    "Catch": [
                        {"ErrorEquals": ["States.ALL"], "Next": "B"},
                        {"ErrorEquals": ["E"], "Next": "B"},
                    ],
                },
                B=END,
            ),
            "main.yaml: States.A.Catch[0]",
            "must be the last Catcher",
        ),
        (
            machine(
                A={"Type": "Task", "Resource": "g", "End": True, "Catch": [{"ErrorEquals": ["E"]}]}
            ),
            "main.yaml: States.A.Catch[0]",
            "must have 'Next'",
        ),
        (
            machine(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "End": True,
                    "Catch": [{"ErrorEquals": ["E"], "Next": "Z"}],
                }
            ),
            "main.yaml: States.A.Catch[0].Next",
            "names no state",
        ),
        (
            machine(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "Next": "B",
                    "Catch": [{"ErrorEquals": ["E"], "Next": "B", "ResultPath": "$.a[0:1]"}],
                },
                B=END,
            ),
            "main.yaml: States.A.Catch[0].ResultPath",
            "reference path",
        ),
        (
            machine(A={"Type": "Pass", "End": True, "Retry": []}),
            "main.yaml: States.A.Retry",
            "unknown field 'Retry' in a Pass state",
        ),
        (
            machine(A={"Type": "Parallel", "Branches": [], "End": True}),
            "main.yaml: States.A",
            "non-empty array",
        ),
        (
            machine(
                A={
                    "Type": "Parallel",
                    "End": True,
                    "Branches": [{"StartAt": "X", "States": {"X": {"Type": "Pass", "Next": "B"}}}],
                },
                B=END,
            ),
            "main.yaml: States.A.Branches[0].States.X.Next",
            "names no state in this scope",
        ),
        (
            machine(
                A={
                    "Type": "Parallel",
                    "End": True,
                    "Branches": [{"StartAt": "Q", "States": {"X": END}}],
                }
            ),
            "main.yaml: States.A.Branches[0].StartAt",
            "StartAt 'Q' names no state",
        ),
        (
            machine(
                A={
                    "Type": "Parallel",
                    "End": True,
                    "Branches": [{"StartAt": "A", "States": {"A": END}}],
                }
            ),
            "main.yaml: States.A.Branches[0].States.A",
            "already used at States.A",
        ),
        (
            machine(
                A={
                    "Type": "Parallel",
                    "End": True,
                    "Branches": [{"StartAt": "X", "States": {"X": END}, "Extra": 1}],
                }
            ),
            "main.yaml: States.A.Branches[0]",
            "unknown field 'Extra'",
        ),
        (
            machine(A={"Type": "Map", "End": True}),
            "main.yaml: States.A",
            "must have 'ItemProcessor'",
        ),
        (
            machine(
                A={
                    "Type": "Map",
                    "End": True,
                    "ItemSelector": {},
                    "Parameters": {},
                    "ItemProcessor": {"StartAt": "X", "States": {"X": END}},
                }
            ),
            "main.yaml: States.A",
            "both 'ItemSelector' and 'Parameters'",
        ),
        (
            machine(
                A={
                    "Type": "Map",
                    "End": True,
                    "ItemReader": {},
                    "ItemProcessor": {"StartAt": "X", "States": {"X": END}},
                }
            ),
            "main.yaml: States.A.ItemReader",
            "not supported by SAND",
        ),
        (
            machine(
                A={
                    "Type": "Map",
                    "End": True,
                    "MaxConcurrency": -1,
                    "ItemProcessor": {"StartAt": "X", "States": {"X": END}},
                }
            ),
            "main.yaml: States.A.MaxConcurrency",
            "non-negative integer",
        ),
        (
            machine(
                A={
                    "Type": "Map",
                    "End": True,
                    "ItemsPath": "$.a[*]",
                    "ItemProcessor": {"StartAt": "X", "States": {"X": END}},
                }
            ),
            "main.yaml: States.A.ItemsPath",
            "reference path",
        ),
        (
            machine(
                A={
                    "Type": "Map",
                    "End": True,
                    "ItemProcessor": {
                        "StartAt": "X",
                        "States": {
                            "X": {"Type": "Pass", "Next": "Y"},
                            "Y": {"Type": "Pass", "Next": "X"},
                        },
                    },
                }
            ),
            "main.yaml: States.A.ItemProcessor.States.X",
            "cycle X -> Y can never end",
        ),
        (
            machine(A={"Type": "Pass", "Next": "B"}, B={"Type": "Pass", "Next": "A"}),
            "main.yaml: States.A",
            "cycle A -> B can never end",
        ),
        (machine(A={"Type": "Pass", "Next": "A"}), "main.yaml: States.A", "cycle A can never end"),
        (
            {"StartAt": "A", "States": {"A": END}, "TimeoutSeconds": 5},
            "main.yaml: TimeoutSeconds",
            "not supported by SAND",
        ),
        (
            {"StartAt": "A", "States": {"A": END}, "Extra": 1},
            "main.yaml",
            "unknown top-level field 'Extra'",
        ),
        ({"StartAt": "A", "States": {}}, "main.yaml: States", "non-empty object"),
        (
            {"StartAt": "Q", "States": {"A": END}},
            "main.yaml: StartAt",
            "StartAt 'Q' names no state",
        ),
        (
            {"StartAt": "A", "States": {"A": END}, "Version": "2.0"},
            "main.yaml: Version",
            "only version '1.0'",
        ),
        (
            {"StartAt": "A", "States": {"A": END}, "QueryLanguage": "XPath"},
            "main.yaml: QueryLanguage",
            "must be one of JSONPath, JSONata",
        ),
        (machine(**{"A" * 81: END}), "main.yaml: States." + "A" * 81, "at most 80 characters"),
    ],
)
def test_asl_rule_is_reported(defn: Any, location: str, fragment: str) -> None:
    """Each broken ASL rule is one Problem at the state (or field) that breaks it."""
    assert_problem(problems(defn), location, fragment)


def test_cycle_with_exit_is_fine() -> None:
    """A loop with a Choice leading out is not an endless cycle."""
    defn = machine(
        A={"Type": "Pass", "Next": "C"},
        C={
            "Type": "Choice",
            "Choices": [{"Variable": "$.done", "BooleanEquals": True, "Next": "D"}],
            "Default": "A",
        },
        D=END,
    )
    assert problems(defn) == []


def test_resource_must_name_an_app_grain() -> None:
    """With the app's grains given, a Resource outside them is a problem; without, it is not."""
    defn = machine(A={"Type": "Task", "Resource": "resize", "End": True})
    assert_problem(
        problems(defn, {"thumb"}),
        "main.yaml: States.A.Resource",
        "Resource 'resize' names no grain of the app",
    )
    assert problems(defn) == []


def test_every_problem_is_collected() -> None:
    """Validation does not stop at the first problem."""
    defn = machine(
        A={"Type": "Pass", "Next": "Nope"},
        B={"Type": "Wait", "End": True},
        C={"Type": "Bogus"},
    )
    found = problems(defn)
    # (B is not also called unreachable: A's dangling Next may have meant it, issue 24)
    assert len(found) == 3
    locations = {p.location for p in found}
    assert {
        "main.yaml: States.A.Next",
        "main.yaml: States.B",
        "main.yaml: States.C.Type",
    } <= locations


def test_malformed_yaml_reports_line_and_column() -> None:
    """A YAML syntax error is one Problem with line:column."""
    with pytest.raises(WorkflowError) as info:
        load_workflow_text("StartAt: A\nStates:\n  A: {Type: Pass\n", source="bad.yaml")
    [problem] = info.value.problems
    assert problem.location.startswith("bad.yaml:4:") or problem.location.startswith("bad.yaml:3:")
    assert "malformed YAML" in problem.message


def test_malformed_json_reports_line_and_column() -> None:
    """A JSON syntax error is one Problem with line:column."""
    with pytest.raises(WorkflowError) as info:
        load_workflow_text('{\n  "StartAt": "A",\n  "States": {,}\n}', source="bad.json")
    [problem] = info.value.problems
    assert problem.location == "bad.json:3:14"
    assert "malformed JSON" in problem.message


def test_workflow_error_prints_one_problem_per_line() -> None:
    """str(WorkflowError) lists each problem on its own line."""
    err = WorkflowError([Problem("a.yaml: States.X", "one"), Problem("a.yaml: States.Y", "two")])
    assert str(err) == "a.yaml: States.X: one\na.yaml: States.Y: two"


def test_non_object_definition() -> None:
    """A definition that is not a mapping is refused."""
    with pytest.raises(WorkflowError) as info:
        load_workflow_text("[1, 2]", source="list.yaml")
    assert "must be an object" in str(info.value)


def test_load_and_validate_files(tmp_path: Path) -> None:
    """load_workflow and validate_workflow read JSON or YAML files; names come from the file."""
    good = tmp_path / "flow.json"
    good.write_text(json.dumps(machine(A=END)))
    bad = tmp_path / "broken.yaml"
    bad.write_text(yaml.safe_dump(machine(A={"Type": "Pass"})))
    assert load_workflow(good).name == "flow"
    assert validate_workflow(good) == []
    [problem] = validate_workflow(bad)
    assert problem.location == "broken.yaml: States.A"
    assert validate_workflow(tmp_path / "missing.yaml")[0].message.startswith("cannot read")


def test_misspelledTargets_getDidYouMean_andNoCascadeOfUnreachableStates() -> None:
    """Issue 24: a misspelled Next or Default got no suggestion, and every state behind it
    was reported unreachable too. Each reference names its closest state; the graph of a
    scope with a dangling transition is not judged (the problems are the typos alone)."""
    found = problems(
        machine(
            Validate={
                "Type": "Task",
                "Resource": "validate",
                "Next": "PriceItem",
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Fial"}],
            },
            PriceItems={"Type": "Task", "Resource": "prcie", "Next": "Check"},
            Check={
                "Type": "Choice",
                "Choices": [{"Variable": "$.ok", "BooleanEquals": True, "Next": "Done"}],
                "Default": "Fial",
            },
            Done=END,
            Fail={"Type": "Fail", "Error": "Rejected"},
        ),
        grains={"validate", "price"},
    )
    assert sorted((p.location, p.message) for p in found) == [
        (
            "main.yaml: States.Check.Default",
            "Default 'Fial' names no state in this scope; did you mean 'Fail'?",
        ),
        (
            "main.yaml: States.PriceItems.Resource",
            "Resource 'prcie' names no grain of the app (grains: price, validate); "
            "did you mean 'price'?",
        ),
        (
            "main.yaml: States.Validate.Catch[0].Next",
            "Next 'Fial' names no state in this scope; did you mean 'Fail'?",
        ),
        (
            "main.yaml: States.Validate.Next",
            "Next 'PriceItem' names no state in this scope; did you mean 'PriceItems'?",
        ),
    ]


def test_unreachableState_stillReported_whenEveryTransitionNamesAState() -> None:
    """The graph check still judges a scope without typos, nested ones included."""
    found = problems(machine(A={"Type": "Pass", "End": True}, B=END))
    assert_problem(found, "main.yaml: States.B", "unreachable")
