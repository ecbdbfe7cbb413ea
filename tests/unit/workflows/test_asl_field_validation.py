"""Validation of an ASL state's fields: fields its Type does not have, paths, Parameters
and intrinsic functions, and the fields of Wait, Fail, Task and Map states, a Task's Resource
included. Every rule broken is reported with its location and the rule's name."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.workflows.workflow_problems import END, assert_problem, machine, problems


@pytest.mark.parametrize(
    ("defn", "location", "fragment"),
    [
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
    ],
)
def test_field_rule_is_reported(defn: Any, location: str, fragment: str) -> None:
    """Each broken field rule is one Problem at the state (or field) that breaks it."""
    assert_problem(problems(defn), location, fragment)


def test_resource_must_name_an_app_grain() -> None:
    """With the app's grains given, a Resource outside them is a problem; without, it is not."""
    defn = machine(A={"Type": "Task", "Resource": "resize", "End": True})
    assert_problem(
        problems(defn, {"thumb"}),
        "main.yaml: States.A.Resource",
        "Resource 'resize' names no grain of the app",
    )
    assert problems(defn) == []
