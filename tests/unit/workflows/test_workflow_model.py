"""The compiled graph: one record class per kind of state, carrying its own transitions."""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from sand_workflows import load_workflow_text
from sand_workflows.model import (
    ChoiceState,
    FailState,
    GrainState,
    MapState,
    ParallelState,
    PassState,
    SucceedState,
    TaskState,
    WaitState,
    WorkflowKind,
)

MACHINE = {
    "StartAt": "T",
    "States": {
        "T": {
            "Type": "Task",
            "Resource": "g",
            "Next": "C",
            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "F"}],
        },
        "C": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.x", "IsPresent": True, "Next": "W"}],
            "Default": "P",
        },
        "W": {"Type": "Wait", "Seconds": 1, "Next": "Par"},
        "Par": {
            "Type": "Parallel",
            "Next": "M",
            "Branches": [{"StartAt": "B", "States": {"B": {"Type": "Pass", "End": True}}}],
        },
        "M": {
            "Type": "Map",
            "Next": "S",
            "ItemProcessor": {"StartAt": "I", "States": {"I": {"Type": "Succeed"}}},
        },
        "P": {"Type": "Pass", "Result": 1, "Next": "S"},
        "S": {"Type": "Succeed"},
        "F": {"Type": "Fail", "Error": "E"},
    },
}


def test_each_asl_type_compiles_to_its_own_class() -> None:
    """States become TaskState, ChoiceState, ... (nested branches included)."""
    wf = load_workflow_text(yaml.safe_dump(MACHINE), "m.yaml")
    assert wf.kind == WorkflowKind.ASL == "asl"
    kinds = {name: type(st) for name, st in wf.states.items()}
    assert kinds == {
        "T": TaskState,
        "C": ChoiceState,
        "W": WaitState,
        "Par": ParallelState,
        "B": PassState,
        "M": MapState,
        "I": SucceedState,
        "P": PassState,
        "S": SucceedState,
        "F": FailState,
    }


def test_states_know_their_targets_and_whether_they_end() -> None:
    """targets() lists Next, Choice targets, Default and Catch; Succeed/Fail/End are terminal."""
    states = load_workflow_text(yaml.safe_dump(MACHINE), "m.yaml").states
    assert states["T"].targets() == ("C", "F")
    assert states["C"].targets() == ("W", "P")
    assert {n for n, st in states.items() if st.terminal} == {"B", "I", "S", "F"}


def test_native_grains_compile_to_grain_states_with_predecessors() -> None:
    """A native grain is a GrainState; a join knows its predecessors in name order."""
    doc = {
        "entry": "a",
        "grains": {
            "a": {"next": ["c", "b"]},
            "b": {"next": "m"},
            "c": {"next": "m"},
            "m": {"join": True},
        },
        "exit": "m",
    }
    wf = load_workflow_text(yaml.safe_dump(doc), "n.yaml")
    assert wf.kind == WorkflowKind.NATIVE and wf.concurrent
    merge = wf.states["m"]
    assert isinstance(merge, GrainState) and merge.join and merge.predecessors == ("b", "c")
    assert wf.states["a"].targets() == ("c", "b")


def test_states_are_frozen_and_slotted() -> None:
    """A compiled state cannot be changed, nor given stray attributes."""
    st = load_workflow_text(yaml.safe_dump(MACHINE), "m.yaml").states["T"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.name = "other"  # type: ignore[misc]
    assert not hasattr(st, "__dict__")
