"""Which grains of a workflow must run on the same hosts, because they share a group's state.

A Parallel or Map state, and a native workflow that fans out (its end guard and its
joins), keep their state in a group: a hash in the local Redis of the host where the
group was opened (``sand_worker.store``). Every grain that opens the group, records a
branch result into it or claims a Map item from it must therefore reach that same Redis,
which holds only when those grains run on the same hosts: a hop between grains placed on
the same hosts stays on the local bus of the host that took it. The placement check
(``sand.placement``) refuses a placement that splits one of these sets.

For a Parallel/Map state the set is every Task grain inside it (nested states included)
and every grain that can hand over to it: the Task before it (through Choice, Pass and
Wait states, which run in the instance of the Task before them; after another
Parallel/Map state, any grain inside it), or the workflow's entry grain when the state
can be reached from the start without a Task.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .model import GrainState, MapState, ParallelState, State, TaskState, Workflow, WorkflowKind


@dataclass(frozen=True, slots=True)
class Colocation:
    """Grains that must be placed on the same hosts, and why.

    ``state`` is the Parallel/Map state, or None for a native workflow that fans out
    (every grain of it shares the end guard group).
    """

    state: str | None
    grains: tuple[str, ...]


def entry_grain(workflow: Workflow, grains: Sequence[str]) -> str:
    """The grain whose worker takes this workflow's INVOKE events (decision 0004):
    the grain of the start state when it is a Task or a native grain, else the
    first Task's grain in definition order, else the app's first grain."""
    start = workflow.states.get(workflow.start_at)
    if isinstance(start, TaskState) and start.resource in grains:
        return start.resource
    if workflow.kind == WorkflowKind.NATIVE and workflow.start_at in grains:
        return workflow.start_at
    for state in workflow.states.values():
        if isinstance(state, TaskState) and state.resource in grains:
            return state.resource
    return grains[0]


def colocations(workflow: Workflow, grains: Sequence[str]) -> list[Colocation]:
    """The sets of grains of ``workflow`` that share a group's state (outermost groups only:
    a nested group's grains are inside its parent's set). ``grains`` are the app's grains,
    in manifest order (for the entry grain). Pure."""
    if workflow.kind == WorkflowKind.NATIVE:
        if not workflow.concurrent:
            return []
        names = sorted(n for n, s in workflow.states.items() if isinstance(s, GrainState))
        return [Colocation(None, tuple(names))]
    bodies = {
        name: _body(workflow, name)
        for name, state in workflow.states.items()
        if isinstance(state, ParallelState | MapState)
    }
    nested = set().union(*bodies.values()) if bodies else set()
    parents = _parents(workflow)
    entry = entry_grain(workflow, grains)
    found = []
    for name, body in bodies.items():
        if name in nested:
            continue
        inside = _tasks(workflow, body)
        before = _grains_before(workflow, name, parents, entry)
        found.append(Colocation(name, tuple(sorted(inside | before))))
    return found


def _starts(state: State) -> tuple[str, ...]:
    if isinstance(state, ParallelState):
        return state.branches
    if isinstance(state, MapState) and state.processor is not None:
        return (state.processor,)
    return ()


def _body(workflow: Workflow, group: str) -> set[str]:
    """Every state inside ``group``: its branches' states, nested groups' states included."""
    seen: set[str] = set()
    todo = list(_starts(workflow.states[group]))
    while todo:
        name = todo.pop()
        if name in seen or name not in workflow.states:
            continue
        seen.add(name)
        state = workflow.states[name]
        todo.extend(state.targets())
        todo.extend(_starts(state))
    return seen


def _tasks(workflow: Workflow, states: set[str]) -> set[str]:
    return {s.resource for n in states if isinstance(s := workflow.states[n], TaskState)}


def _parents(workflow: Workflow) -> dict[str, set[str]]:
    parents: dict[str, set[str]] = {name: set() for name in workflow.states}
    for name, state in workflow.states.items():
        for target in state.targets():
            parents.setdefault(target, set()).add(name)
    return parents


def _grains_before(
    workflow: Workflow, group: str, parents: dict[str, set[str]], entry: str
) -> set[str]:
    """The grains whose instance can enter ``group``: walks back through states that run
    in the instance of the Task before them, up to Tasks or the start."""
    found: set[str] = set()
    seen: set[str] = set()
    todo = [group]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name == workflow.start_at:
            found.add(entry)
        for parent in parents.get(name, ()):
            state = workflow.states[parent]
            if isinstance(state, TaskState):
                found.add(state.resource)
                continue
            if isinstance(state, ParallelState | MapState):
                # the instance that records its last branch result goes on from it: any of
                # its grains (or, when its branches hold no Task, the one that opened it)
                found |= _tasks(workflow, _body(workflow, parent))
            todo.append(parent)
    return found
