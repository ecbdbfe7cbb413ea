"""Validation of the native format (``entry`` and ``grains``): every rule broken is reported
with its location and the rule's name, and a document is told from ASL by its fields. The
ASL rules are in the ``test_asl_*_validation`` modules; the helpers are ``workflow_problems``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sand_workflows import load_workflow_text

from tests.unit.workflows.workflow_problems import END, assert_problem, machine, problems


@pytest.mark.parametrize(
    ("defn", "location", "fragment"),
    [
        (
            {"entry": "a", "grains": {"a": {"next": ["b"]}}},
            "main.yaml: grains.a.next",
            "'b' names no grain",
        ),
        (
            {"entry": "a", "grains": {"a": {"potentialNext": ["z"]}}},
            "main.yaml: grains.a.potentialNext",
            "'z' names no grain",
        ),
        (
            {"entry": "a", "grains": {"a": {}, "j": {"join": True}}},
            "main.yaml: grains.j",
            "unreachable join grain",
        ),
        ({"entry": "a", "grains": {"a": {}, "b": {}}}, "main.yaml: grains.b", "unreachable grain"),
        ({"entry": "x", "grains": {"a": {}}}, "main.yaml: entry", "must name a grain"),
        ({"grains": {"a": {}}}, "main.yaml: entry", "must name a grain"),
        ({"entry": "a", "exit": "q", "grains": {"a": {}}}, "main.yaml: exit", "must name a grain"),
        (
            {"entry": "a", "grains": {"a": {"nxt": ["a"]}}},
            "main.yaml: grains.a.nxt",
            "unknown field 'nxt'",
        ),
        (
            {"entry": "a", "grains": {"a": {"next": ["b"], "potentialNext": ["b"]}, "b": {}}},
            "main.yaml: grains.a",
            "either 'next' or 'potentialNext'",
        ),
        (
            {"entry": "a", "grains": {"a": {"next": ["b", "c"]}, "b": {}, "c": {}}},
            "main.yaml: exit",
            "name the one whose output is the result",
        ),
        (
            {"entry": "a", "grains": {"a": {"join": True}}},
            "main.yaml: grains.a",
            "entry grain cannot be a join",
        ),
        (
            {"entry": "a", "grains": {"a": {"next": ["b"]}, "b": {"next": ["a"]}}},
            "main.yaml: grains.a",
            "cycle a -> b can never end",
        ),
        (
            {"entry": "a", "grains": {"a": {"timeoutSeconds": 0}}},
            "main.yaml: grains.a.timeoutSeconds",
            "positive number",
        ),
        (
            {"entry": "a", "grains": {"a": {"join": "yes"}}},
            "main.yaml: grains.a.join",
            "true or false",
        ),
        (
            {"entry": "a", "grains": {"a": {"next": ["b", "b"]}, "b": {}}},
            "main.yaml: grains.a.next",
            "listed twice",
        ),
        (
            {"entry": "a", "exit": "a", "grains": {"a": {"next": ["b"]}, "b": {}}},
            "main.yaml: grains.a",
            "exit grain must not have 'next'",
        ),
        ({"entry": "a", "grains": {}}, "main.yaml: grains", "non-empty mapping"),
        (
            {"entry": "a", "grains": {"a": {}}, "extra": 1},
            "main.yaml",
            "unknown top-level field 'extra'",
        ),
    ],
)
def test_native_rule_is_reported(defn: Any, location: str, fragment: str) -> None:
    """Each broken native rule is one Problem naming the grain."""
    assert_problem(problems(defn), location, fragment)


def test_native_grain_must_be_in_app() -> None:
    """With the app's grains given, a native grain outside them is a problem."""
    assert_problem(
        problems({"entry": "a", "grains": {"a": {}}}, {"b"}),
        "main.yaml: grains.a",
        "names no grain of the app",
    )


def test_native_join_with_single_predecessor_is_fine() -> None:
    """A join reached from one grain is valid."""
    assert problems({"entry": "a", "grains": {"a": {"next": ["j"]}, "j": {"join": True}}}) == []


def test_native_is_told_from_asl_by_start_at() -> None:
    """StartAt/States mean ASL; anything else is the native format."""
    native = load_workflow_text("entry: a\ngrains: {a: {}}\n", source="n.yaml")
    asl = load_workflow_text(json.dumps(machine(A=END)), source="a.json")
    assert native.kind == "native" and asl.kind == "asl"


def test_native_misspelledNext_didYouMean_andNoUnreachableGrain() -> None:
    found = problems({"entry": "a", "grains": {"a": {"next": "bb"}, "b": {}}})
    assert [(p.location, p.message) for p in found] == [
        ("main.yaml: grains.a.next", "'bb' names no grain of 'grains'; did you mean 'b'?")
    ]
