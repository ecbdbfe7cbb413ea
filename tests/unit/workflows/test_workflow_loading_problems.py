"""Reading a definition: malformed YAML and JSON are reported with line and column, one that
is not an object is refused, files are read as JSON or YAML (a missing one reported), and
WorkflowError prints its problems one a line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from sand_workflows import (
    Problem,
    WorkflowError,
    load_workflow,
    load_workflow_text,
    validate_workflow,
)

from tests.unit.workflows.workflow_problems import END, machine


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
