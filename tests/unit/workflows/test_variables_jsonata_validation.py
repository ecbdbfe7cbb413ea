"""Validation of variables and JSONata: each broken rule is refused naming the file, the
state and the field (decision 0020)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.workflows.workflow_problems import END, assert_problem, problems


def jsonata(**states: Any) -> dict[str, Any]:
    return {"QueryLanguage": "JSONata", "StartAt": next(iter(states)), "States": states}


def jsonpath(**states: Any) -> dict[str, Any]:
    return {"StartAt": next(iter(states)), "States": states}


S = "main.yaml: States"


@pytest.mark.parametrize(
    ("defn", "location", "fragment"),
    [
        # variable names
        (
            jsonpath(A={"Type": "Pass", "Assign": {"1st": 1}, "End": True}),
            f"{S}.A.Assign.1st",
            "not a valid variable name",
        ),
        (
            jsonpath(A={"Type": "Pass", "Assign": {"my-var": 1}, "End": True}),
            f"{S}.A.Assign.my-var",
            "not a valid variable name",
        ),
        (
            jsonpath(A={"Type": "Pass", "Assign": {"states": 1}, "End": True}),
            f"{S}.A.Assign.states",
            "reserved",
        ),
        (
            jsonpath(A={"Type": "Pass", "Assign": {"v" * 81: 1}, "End": True}),
            f"{S}.A.Assign.{'v' * 81}",
            "longer than 80",
        ),
        (
            jsonpath(A={"Type": "Pass", "Assign": {"x": 1, "x.$": "$.a"}, "End": True}),
            f"{S}.A.Assign.x.$",
            "assigned twice",
        ),
        (
            jsonpath(A={"Type": "Pass", "Assign": ["x"], "End": True}),
            f"{S}.A.Assign",
            "must be an object",
        ),
        # size limits on literal values
        (
            jsonpath(A={"Type": "Pass", "Assign": {"big": "x" * 300_000}, "End": True}),
            f"{S}.A.Assign",
            "more than 262144",
        ),
        (
            jsonpath(
                A={
                    "Type": "Pass",
                    "Assign": {"a": "x" * 200_000, "b": "y" * 100_000},
                    "End": True,
                }
            ),
            f"{S}.A.Assign",
            "values assigned are",
        ),
        # Assign where it does not belong
        (
            jsonpath(A={"Type": "Succeed", "Assign": {"x": 1}}),
            f"{S}.A.Assign",
            "unknown field 'Assign'",
        ),
        # unknown variables
        (
            jsonpath(A={"Type": "Pass", "Parameters": {"v.$": "$nope"}, "End": True}),
            f"{S}.A.Parameters",
            "unknown variable '$nope'",
        ),
        (
            jsonpath(
                A={
                    "Type": "Pass",
                    "Parameters": {"v.$": "States.Format('{}', $ghost)"},
                    "End": True,
                }
            ),
            f"{S}.A.Parameters",
            "unknown variable '$ghost'",
        ),
        (
            jsonpath(
                A={
                    "Type": "Choice",
                    "Choices": [{"Variable": "$missing", "IsPresent": True, "Next": "B"}],
                    "Default": "B",
                },
                B=END,
            ),
            f"{S}.A.Choices[0]",
            "unknown variable '$missing'",
        ),
        (
            jsonpath(A={"Type": "Wait", "SecondsPath": "$later", "End": True}),
            f"{S}.A.SecondsPath",
            "unknown variable '$later'",
        ),
        # a variable assigned inside a Map iteration is not visible after it
        (
            jsonpath(
                M={
                    "Type": "Map",
                    "ItemProcessor": {
                        "StartAt": "I",
                        "States": {"I": {"Type": "Pass", "Assign": {"inner": 1}, "End": True}},
                    },
                    "Next": "After",
                },
                After={"Type": "Pass", "Parameters": {"v.$": "$inner"}, "End": True},
            ),
            f"{S}.After.Parameters",
            "unknown variable '$inner'",
        ),
        # a variable path may not be written
        (
            jsonpath(A={"Type": "Pass", "ResultPath": "$x", "End": True}),
            f"{S}.A.ResultPath",
            "must not name a variable",
        ),
        # JSONata syntax
        (
            jsonata(A={"Type": "Pass", "Output": "{% $states.input.( %}", "End": True}),
            f"{S}.A.Output",
            "not a JSONata expression",
        ),
        (
            jsonata(A={"Type": "Pass", "Output": {"v": "{% %}"}, "End": True}),
            f"{S}.A.Output.v",
            "is empty",
        ),
        (
            jsonata(A={"Type": "Pass", "Output": "{% 1 + 1", "End": True}),
            f"{S}.A.Output",
            "must end with '%}'",
        ),
        (
            jsonata(A={"Type": "Pass", "Output": "{% $eval('1') %}", "End": True}),
            f"{S}.A.Output",
            "$eval is not supported",
        ),
        # fields of the other query language
        (
            jsonata(A={"Type": "Pass", "InputPath": "$.a", "End": True}),
            f"{S}.A.InputPath",
            "is a JSONPath field and this state uses JSONata",
        ),
        (
            jsonata(A={"Type": "Task", "Resource": "g", "Parameters": {}, "End": True}),
            f"{S}.A.Parameters",
            "is a JSONPath field",
        ),
        (
            jsonpath(A={"Type": "Pass", "Output": {}, "End": True}),
            f"{S}.A.Output",
            "is a JSONata field and this state uses JSONPath",
        ),
        (
            jsonpath(A={"Type": "Task", "Resource": "g", "Arguments": {}, "End": True}),
            f"{S}.A.Arguments",
            "is a JSONata field",
        ),
        (
            jsonata(
                A={
                    "Type": "Choice",
                    "Choices": [{"Variable": "$.a", "IsPresent": True, "Next": "B"}],
                    "Default": "B",
                },
                B=END,
            ),
            f"{S}.A.Choices[0].Variable",
            "tests a 'Condition'",
        ),
        (
            jsonata(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.e", "Next": "B"}],
                    "End": True,
                },
                B=END,
            ),
            f"{S}.A.Catch[0].ResultPath",
            "is a JSONPath field of a Catcher",
        ),
        (
            {
                "QueryLanguage": "JSONata",
                "StartAt": "A",
                "States": {"A": {"Type": "Pass", "QueryLanguage": "JSONPath", "End": True}},
            },
            f"{S}.A.QueryLanguage",
            "cannot use JSONPath",
        ),
        (
            jsonpath(A={"Type": "Pass", "QueryLanguage": "XPath", "End": True}),
            f"{S}.A.QueryLanguage",
            "must be one of JSONPath, JSONata",
        ),
        # $states fields where they do not exist
        (
            jsonata(
                A={
                    "Type": "Task",
                    "Resource": "g",
                    "Arguments": "{% $states.result %}",
                    "End": True,
                }
            ),
            f"{S}.A.Arguments",
            "'$states.result' does not exist",
        ),
        (
            jsonata(A={"Type": "Pass", "Output": "{% $states.result %}", "End": True}),
            f"{S}.A.Output",
            "'$states.result' does not exist",
        ),
        (
            jsonata(A={"Type": "Pass", "Output": "{% $states.errorOutput %}", "End": True}),
            f"{S}.A.Output",
            "'$states.errorOutput' does not exist",
        ),
        (
            jsonata(A={"Type": "Pass", "Output": "{% $states.inputs %}", "End": True}),
            f"{S}.A.Output",
            "not a field of $states",
        ),
        # JSONata field shapes
        (
            jsonata(
                A={"Type": "Choice", "Choices": [{"Condition": "yes", "Next": "B"}]},
                B=END,
            ),
            f"{S}.A.Choices[0].Condition",
            "must have 'Condition'",
        ),
        (
            jsonata(
                A={
                    "Type": "Map",
                    "Items": "not an expression",
                    "ItemProcessor": {"StartAt": "I", "States": {"I": END}},
                    "End": True,
                }
            ),
            f"{S}.A.Items",
            "must be an array or a {% %} expression",
        ),
        (
            jsonata(A={"Type": "Fail", "Error": 42}),
            f"{S}.A.Error",
            "must be a string",
        ),
    ],
)
def test_rule_is_reported(defn: Any, location: str, fragment: str) -> None:
    assert_problem(problems(defn), location, fragment)


def test_variables_assigned_in_outer_scope_and_catch_are_known() -> None:
    defn = jsonpath(
        Init={"Type": "Pass", "Assign": {"outer": 1}, "Next": "Try"},
        Try={
            "Type": "Task",
            "Resource": "g",
            "Catch": [
                {"ErrorEquals": ["States.ALL"], "Assign": {"err.$": "$.Error"}, "Next": "Fix"}
            ],
            "Next": "Each",
        },
        Fix={"Type": "Pass", "Parameters": {"e.$": "$err"}, "Next": "Each"},
        Each={
            "Type": "Map",
            "ItemProcessor": {
                "StartAt": "I",
                "States": {"I": {"Type": "Pass", "Parameters": {"o.$": "$outer"}, "End": True}},
            },
            "End": True,
        },
    )
    assert problems(defn) == []


def test_jsonata_local_bindings_and_functions_are_not_variables() -> None:
    defn = jsonata(
        A={
            "Type": "Pass",
            "Output": "{% ($double := function($v) { $v * 2 }; $map([1, 2], $double)) %}",
            "Assign": {"when": "{% $now() %}", "id": "{% $uuid() %}"},
            "End": True,
        }
    )
    assert problems(defn) == []


def test_every_jsonata_field_is_accepted() -> None:
    defn = jsonata(
        T={
            "Type": "Task",
            "Resource": "g",
            "Arguments": {"a": "{% $states.input.a %}"},
            "TimeoutSeconds": "{% 5 %}",
            "Output": "{% $states.result %}",
            "Assign": {"r": "{% $states.result %}"},
            "Retry": [{"ErrorEquals": ["States.ALL"]}],
            "Catch": [
                {
                    "ErrorEquals": ["States.ALL"],
                    "Output": "{% $states.errorOutput %}",
                    "Assign": {"e": "{% $states.errorOutput.Error %}"},
                    "Next": "W",
                }
            ],
            "Next": "W",
        },
        W={"Type": "Wait", "Seconds": "{% 0 %}", "Next": "C"},
        C={
            "Type": "Choice",
            "Choices": [{"Condition": "{% $r = 1 %}", "Next": "F"}],
            "Default": "M",
        },
        M={
            "Type": "Map",
            "Items": "{% [1, 2] %}",
            "ItemSelector": {"v": "{% $states.context.Map.Item.Value %}"},
            "MaxConcurrency": "{% 1 %}",
            "ItemProcessor": {"StartAt": "I", "States": {"I": END}},
            "Next": "P",
        },
        P={
            "Type": "Parallel",
            "Arguments": "{% $states.input %}",
            "Branches": [{"StartAt": "B", "States": {"B": END}}],
            "Next": "F",
        },
        F={"Type": "Fail", "Error": "{% 'E' & $e %}", "Cause": "literal"},
    )
    assert problems(defn) == []


def test_string_to_json_of_blank_string_is_null() -> None:
    from sand_workflows.intrinsics import evaluate, parse_intrinsic

    assert evaluate(parse_intrinsic("States.StringToJson($.s)"), {"s": "  "}, {}) is None
    assert evaluate(parse_intrinsic("States.StringToJson($.s)"), {"s": ""}, {}) is None
