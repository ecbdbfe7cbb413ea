"""A tiny synchronous in-process driver, for tests of the engine and the conformance cases.

Not the emulator: it calls grain functions in this process (the emulator forks them).
Virtual time: timers fire in due order; with ``skip_waits`` no real time passes.
"""

from __future__ import annotations

import concurrent.futures
import heapq
import itertools
import time
from collections.abc import Callable, Mapping
from typing import Any

from . import errors, history
from .engine import (
    Action,
    AwaitCallback,
    Engine,
    Failed,
    Finished,
    Redrive,
    TaskCall,
    TimerCall,
)
from .model import Workflow
from .store import ExecutionStore, InMemoryStore


class GrainContext:
    """What the driver hands a grain: ids, the context object, dynamic next, scratch data.

    ``data`` is shared by every grain call of one ``run`` (grains like ``flaky`` count
    attempts in it).
    """

    def __init__(
        self, execution_id: str, grain_name: str, state: dict[str, Any], data: dict[str, Any]
    ) -> None:
        self.execution_id = execution_id
        self.grain_name = grain_name
        self.state = state
        self.data = data
        self.next_grains: list[str] = []

    def add_next(self, name: str) -> None:
        """Choose ``name`` (one of this grain's potentialNext) as a next grain."""
        self.next_grains.append(name)

    send = add_next


Grain = Callable[[Any, Any], Any]


def run(
    workflow: Workflow,
    input: Any,
    grains: Mapping[str, Grain],
    *,
    skip_waits: bool = True,
    execution_id: str = "exec-1",
    store: ExecutionStore | None = None,
    on_action: Callable[[Action], None] | None = None,
    max_actions: int = 100_000,
    recorder: history.Recorder | None = None,
    redrive: Redrive | None = None,
) -> Finished | Failed:
    """Run ``workflow`` to its end, calling ``grains[name](event, context)`` for each task.
    With ``redrive``, run a failed execution again from the state it names
    (``Engine.start``); pass the ``store`` of the runs before it.

    An exception from a grain fails the task with error = its class name and cause =
    its message; a task running longer than its ``timeout_s`` fails with States.Timeout
    (the grain's thread is abandoned). Raises RuntimeError if the execution stalls.
    ``recorder`` receives the execution's history events.
    """
    with history.recording(recorder):
        return _run(
            workflow,
            input,
            grains,
            skip_waits,
            execution_id,
            store,
            on_action,
            max_actions,
            redrive,
        )


def _run(
    workflow: Workflow,
    input: Any,
    grains: Mapping[str, Grain],
    skip_waits: bool,
    execution_id: str,
    store: ExecutionStore | None,
    on_action: Callable[[Action], None] | None,
    max_actions: int,
    redrive: Redrive | None,
) -> Finished | Failed:
    engine = Engine(workflow, store or InMemoryStore())
    shared: dict[str, Any] = {}
    seq = itertools.count()
    now = 0.0
    queue: list[tuple[float, int, Action]] = []

    def push(actions: list[Action]) -> None:
        for action in actions:
            if on_action is not None:
                on_action(action)
            if isinstance(action, TimerCall):
                due = now + action.delay_s
            elif isinstance(action, AwaitCallback):
                # nobody can call back into this in-process run: the wait times out
                due = now + max(0.0, action.timeout_at_ms / 1000 - time.time())
            else:
                due = now
            heapq.heappush(queue, (due, next(seq), action))

    push(engine.start(execution_id, input, redrive=redrive))
    handled = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        while queue:
            handled += 1
            if handled > max_actions:
                raise RuntimeError(f"execution did not end after {max_actions} actions")
            due, _, action = heapq.heappop(queue)
            if due > now:
                if not skip_waits:
                    time.sleep(due - now)
                now = due
            if isinstance(action, Finished | Failed):
                return action
            if isinstance(action, TimerCall):
                push(engine.timer_fired(action.token))
                continue
            if isinstance(action, AwaitCallback):
                cause = "no callback reaches an in-process run"
                push(engine.callback_ended(action.token, {"error": errors.TIMEOUT, "cause": cause}))
                continue
            push(_call(engine, pool, grains, action, execution_id, shared))
    raise RuntimeError("execution stalled: no action left and no result")


def _call(
    engine: Engine,
    pool: concurrent.futures.ThreadPoolExecutor,
    grains: Mapping[str, Grain],
    call: TaskCall,
    execution_id: str,
    shared: dict[str, Any],
) -> list[Action]:
    fn = grains.get(call.grain)
    if fn is None:
        return engine.task_failed(call.token, errors.TASK_FAILED, f"no grain named '{call.grain}'")
    ctx = GrainContext(execution_id, call.grain, call.context, shared)
    history.emit_for_token("TaskStarted", call.token, grain=call.grain)
    future = pool.submit(fn, call.input, ctx)
    try:
        output = future.result(timeout=call.timeout_s)
    except concurrent.futures.TimeoutError:
        return engine.task_failed(
            call.token, errors.TIMEOUT, f"grain '{call.grain}' ran longer than {call.timeout_s} s"
        )
    except Exception as exc:
        return engine.task_failed(call.token, type(exc).__name__, str(exc))
    return engine.task_succeeded(call.token, output, ctx.next_grains or None)
