"""Engine.replayed: an event replayed after its host died, on a host whose store never had the
execution's fan-out state (decision 0015). Two stores stand for two hosts' Redis."""

from __future__ import annotations

from collections import deque
from typing import Any

import yaml
from sand_workflows import Workflow, load_workflow_text
from sand_workflows.engine import Action, Engine, Failed, Finished, InMemoryStore, TaskCall
from sand_workflows.tokens import decode_token


def wf(defn: dict[str, Any]) -> Workflow:
    return load_workflow_text(yaml.safe_dump(defn), source="t.yaml")


def task(resource: str, **more: Any) -> dict[str, Any]:
    return {"Type": "Task", "Resource": resource, **more}


CHAIN = {"StartAt": "A", "States": {"A": task("a", Next="B"), "B": task("b", End=True)}}

FAN = {
    "StartAt": "First",
    "States": {
        "First": task("first", Next="Fan"),
        "Fan": {
            "Type": "Parallel",
            "Branches": [
                {
                    "StartAt": "L",
                    "States": {"L": task("left", Next="L2"), "L2": task("left2", End=True)},
                },
                {"StartAt": "R", "States": {"R": task("right", End=True)}},
            ],
            "Next": "Each",
        },
        "Each": {
            "Type": "Map",
            "ItemsPath": "$[1]",
            "MaxConcurrency": 2,
            "ItemProcessor": {"StartAt": "I", "States": {"I": task("item", End=True)}},
            "End": True,
        },
    },
}

NATIVE = {
    "entry": "split",
    "grains": {
        "split": {"next": ["x", "y"]},
        "x": {"next": ["join"]},
        "y": {"next": ["join"]},
        "join": {"join": True},
    },
}


def grain(call: TaskCall) -> Any:
    """Deterministic grains: each names itself; ``right`` gives the Map's items."""
    if call.grain == "right":
        return [10, 20, 30, 40, 50]
    if call.grain == "item":
        return call.input * 2
    if call.grain == "join":
        return sorted(call.input)
    return f"{call.grain}({call.input})"


def run(engine: Engine, actions: list[Action], limit: int = 500) -> tuple[list[Any], list[str]]:
    """Runs every TaskCall to its end (breadth first); the executions' ends and the grains run."""
    queue: deque[Action] = deque(actions)
    ends: list[Any] = []
    ran: list[str] = []
    while queue and limit:
        limit -= 1
        action = queue.popleft()
        if isinstance(action, Finished | Failed):
            ends.append(action)
            continue
        assert isinstance(action, TaskCall), action
        ran.append(action.grain)
        queue.extend(engine.task_succeeded(action.token, grain(action)))
    assert not queue, "the execution did not end"
    return ends, ran


def expected_fan_output() -> Any:
    return [20, 40, 60, 80, 100]


def test_chainToken_isHandledAsUsual() -> None:
    """A token outside any fan-out needs no shared state: None (handle the event)."""
    engine = Engine(wf(CHAIN), InMemoryStore())
    (call,) = engine.start("e", 1)
    assert Engine(wf(CHAIN), InMemoryStore()).replayed(call.token) is None


def test_groupKnownHere_isHandledAsUsual() -> None:
    """On the host that opened the group (a sandbox restart), the event runs as usual."""
    store = InMemoryStore()
    engine = Engine(wf(FAN), store)
    (first,) = engine.start("e", 1)
    left, _right = engine.task_succeeded(first.token, "f")
    assert engine.replayed(left.token) is None


def test_groupClosedHere_isHandledAsUsual() -> None:
    """A group that failed is known: its late events are dropped as before, no rerun."""
    store = InMemoryStore()
    engine = Engine(wf(FAN), store)
    (first,) = engine.start("e", 1)
    left, right = engine.task_succeeded(first.token, "f")
    assert isinstance(engine.task_failed(left.token, "Boom", "x")[0], Failed)
    assert engine.replayed(right.token) is None
    assert engine.task_succeeded(right.token, [1]) == []


def test_groupLostWithItsHost_firstReplayRerunsTheExecution_laterOnesAreDropped() -> None:
    """The group was in the dead host's store: the first replayed event restarts the execution
    from its input on this host, the others give [] (the rerun covers them)."""
    lost = Engine(wf(FAN), InMemoryStore())
    (first,) = lost.start("e", 7, "2024-01-01T00:00:00Z")
    left, right = lost.task_succeeded(first.token, "f")

    here = Engine(wf(FAN), InMemoryStore())
    rerun = here.replayed(left.token)
    assert rerun is not None
    (again,) = rerun
    assert isinstance(again, TaskCall) and (again.grain, again.input) == ("first", 7)
    assert again.context["Execution"]["StartTime"] == "2024-01-01T00:00:00Z"
    assert here.replayed(right.token) == []
    ends, ran = run(here, rerun)
    assert ends == [Finished(expected_fan_output())]
    assert sorted(ran) == sorted(["first", "left", "left2", "right"] + ["item"] * 5)


def test_lostRunEventsArrivingAfterTheRerunOpenedTheGroup_mixWithoutHarm() -> None:
    """Events of the lost run replayed once the rerun reopened their group are handled as
    usual; each slot keeps the first result, and the execution ends once."""
    lost = Engine(wf(FAN), InMemoryStore())
    (first,) = lost.start("e", 7)
    left, right = lost.task_succeeded(first.token, "first(7)")

    here = Engine(wf(FAN), InMemoryStore())
    rerun = here.replayed(left.token)
    assert rerun is not None
    (again,) = rerun
    reopened = here.task_succeeded(again.token, grain(again))
    assert here.replayed(right.token) is None  # its group is known here now
    late = here.task_succeeded(right.token, grain(right))
    ends, _ = run(here, reopened + late)
    assert ends == [Finished(expected_fan_output())]


def test_lostMapItems_mixedWithTheRerun_neverStallTheConcurrencyWindow() -> None:
    """Map items of the lost run (each claiming the next item when it finishes) and the
    rerun's items of the same slots: every item still runs and the Map ends once."""
    lost = Engine(wf(FAN), InMemoryStore())
    (first,) = lost.start("e", 7)
    left, right = lost.task_succeeded(first.token, "first(7)")
    (l2,) = lost.task_succeeded(left.token, grain(left))
    assert lost.task_succeeded(l2.token, grain(l2)) == []
    items = lost.task_succeeded(right.token, grain(right))
    assert [decode_token(i.token).lineage.frames[-1].slot for i in items] == [0, 1]

    here = Engine(wf(FAN), InMemoryStore())
    rerun = here.replayed(items[1].token)
    assert rerun is not None
    # run the rerun until its Map opened, then let the lost run's items arrive
    queue: deque[Action] = deque(rerun)
    while not any(isinstance(a, TaskCall) and a.grain == "item" for a in queue):
        action = queue.popleft()
        assert isinstance(action, TaskCall)
        queue.extend(here.task_succeeded(action.token, grain(action)))
    late: list[Action] = []
    for item in items:
        assert here.replayed(item.token) is None
        late += here.task_succeeded(item.token, grain(item))
    ends, _ = run(here, [*queue, *late])
    assert ends == [Finished(expected_fan_output())]


def test_nativeFanOutLost_rerunsOnce_chainNativeNeedsNothing() -> None:
    """A concurrent native execution's end guard and joins were on the dead host: the first
    replayed event reruns it; the rerun reopens the end guard at once, so the lost run's
    other events then go on and mix in (a join keeps the first output per predecessor). A
    native workflow without fan-out has no shared state."""
    lost = Engine(wf(NATIVE), InMemoryStore())
    (split,) = lost.start("e", 3)
    x, y = lost.task_succeeded(split.token, grain(split))
    assert lost.task_succeeded(x.token, grain(x)) == []

    here = Engine(wf(NATIVE), InMemoryStore())
    rerun = here.replayed(y.token)
    assert rerun is not None and [a.grain for a in rerun if isinstance(a, TaskCall)] == ["split"]
    # the rerun opened the end guard here: the lost run's events go on as usual and mix in
    assert here.replayed(x.token) is None
    late = here.task_succeeded(x.token, grain(x))
    ends, ran = run(here, rerun + late)
    assert ends == [Finished(["x(split(3))", "y(split(3))"])]
    assert sorted(ran) == ["join", "split", "x", "y"]

    chain = {"entry": "a", "grains": {"a": {"next": ["b"]}, "b": {}}}
    (a,) = Engine(wf(chain), InMemoryStore()).start("e", 1)
    assert Engine(wf(chain), InMemoryStore()).replayed(a.token) is None
