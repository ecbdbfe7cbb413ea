"""Validation of ASL error handling: Retriers and Catchers, their fields and their order,
and Retry where a state's Type has none. Every rule broken is reported with its location and
the rule's name."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.workflows.workflow_problems import END, assert_problem, machine, problems


@pytest.mark.parametrize(
    ("defn", "location", "fragment"),
    [
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
    ],
)
def test_retry_catch_rule_is_reported(defn: Any, location: str, fragment: str) -> None:
    """A broken Retry or Catch rule is one Problem at the Retrier, Catcher or field at fault."""
    assert_problem(problems(defn), location, fragment)
