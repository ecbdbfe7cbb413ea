"""Definition files are parsed strictly: a key given twice in one mapping is refused with
the file, the line and column of the second occurrence and the key (YAML, native and ASL;
JSON too); merge keys and equal keys in different mappings are fine."""

from __future__ import annotations

import json

import pytest
import yaml
from sand_workflows import WorkflowError, load_workflow_text
from sand_workflows.loader import parse_text
from sand_workflows.parsing import load_json, load_yaml

ASL_YAML = """\
StartAt: A
States:
  A:
    Type: Pass
    Next: B
    Next: C
  B: {Type: Succeed}
  C: {Type: Succeed}
"""

NATIVE_YAML = """\
entry: a
grains:
  a: {next: b}
  b: {}
  a: {}
"""

ASL_JSON = """{
  "StartAt": "A",
  "States": {
    "A": {"Type": "Pass", "End": true},
    "A": {"Type": "Succeed"}
  }
}"""


def test_yaml_asl_duplicateField_namesFileLineAndKey() -> None:
    """An ASL state with Next twice: the second Next's line and column, and the first's line."""
    with pytest.raises(WorkflowError) as caught:
        load_workflow_text(ASL_YAML, source="wf.yaml")
    [problem] = caught.value.problems
    assert problem.location == "wf.yaml:6:5"
    assert problem.message == "malformed YAML: duplicate key 'Next' (first given on line 5)"


def test_yaml_native_duplicateGrain_refused() -> None:
    """A native workflow that defines a grain twice is refused, not silently overridden."""
    with pytest.raises(WorkflowError) as caught:
        load_workflow_text(NATIVE_YAML, source="main.yaml")
    assert [str(p) for p in caught.value.problems] == [
        "main.yaml:5:3: malformed YAML: duplicate key 'a' (first given on line 3)"
    ]


def test_json_duplicateMember_namesLineAndKey() -> None:
    """ASL in JSON: a state name given twice in States is refused at the second one."""
    with pytest.raises(WorkflowError) as caught:
        load_workflow_text(ASL_JSON, source="main.json")
    assert [str(p) for p in caught.value.problems] == [
        "main.json:5:5: malformed JSON: duplicate key 'A' (first given on line 4)"
    ]


def test_json_sameKeyInDifferentObjects_isFine() -> None:
    """Equal names in sibling or nested objects are not duplicates."""
    text = '{"a": {"x": 1, "y": {"x": 2}}, "b": [{"x": 3}, {"x": 4}], "x": "s\\"x"}'
    assert load_json(text) == json.loads(text)


def test_json_stillRefusesWhatJsonRefuses() -> None:
    """Malformed JSON is still an error with its position."""
    doc, problems = parse_text('{"a": 1,}', "w.json")
    assert doc is None and problems[0].location.startswith("w.json:1:")


def test_yaml_mergeKeys_mayBeOverridden() -> None:
    """`<<: *base` then a key of base: an override YAML means, not a duplicate."""
    assert load_yaml("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n")["d"] == {"x": 3, "y": 2}


def test_yaml_duplicateIsAMarkedError() -> None:
    """Callers that handle MarkedYAMLError get the duplicate's position."""
    with pytest.raises(yaml.MarkedYAMLError) as caught:
        load_yaml("a: 1\nb: 2\na: 3\n")
    mark = caught.value.problem_mark
    assert mark is not None and (mark.line, mark.column) == (2, 0)


def test_yaml_keysEqualAsValues_areDuplicates() -> None:
    """Keys that YAML reads as the same value (1 and 0x1) are duplicates too."""
    with pytest.raises(yaml.MarkedYAMLError, match="duplicate key '1'"):
        load_yaml("1: a\n0x1: b\n")
