"""Validation of an ASL machine's structure: the top-level fields, each state's Type and
transitions, Choice rules, the scopes of Parallel branches and Map processors, and cycles and
unreachable states. Every rule broken is reported with its location and the rule's name."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.workflows.workflow_problems import END, assert_problem, machine, problems


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
def test_structure_rule_is_reported(defn: Any, location: str, fragment: str) -> None:
    """Each broken rule of the structure is one Problem at the state (or field) that breaks it."""
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
