"""Helpers of the validation tests: build a machine, load it as ``main.yaml`` and collect the
Problems it has, and find one by location and message."""

from __future__ import annotations

from typing import Any

import yaml
from sand_workflows import Problem, WorkflowError, load_workflow_text


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
