"""Run an application's workflow on this machine, with no services: ``sand emulate``.

The emulator is a thin driver of the same step interpreter the cluster uses
(``sand_workflows.engine.Engine``). Each ``TaskCall`` runs in a freshly forked
grain process, through the same fork model as a grain instance on a host
(:func:`sand.grain.runner.fork_invocation` on a :class:`sand.grain.pool.Pool`);
calls in flight at the same time (fan-out, Parallel branches, Map items) run
concurrently, up to the app's ``max_concurrency``. Waits and retry intervals
are real timers kept in a heap, so a Wait in one branch never holds up another;
``skip_waits`` fires them at once. The data layer (``context.data``) is an
in-memory store shared by every grain process of the emulation. With a mock file's test
case (``mocks=``, ``case=``; :mod:`sand.mocks`) the calls it names are answered with its
canned results or errors and fork nothing; ``sand.single_state`` reuses this driver to run
one state alone.

From pytest::

    from sand.emulator import emulate

    def test_hello():
        result = emulate("examples/hello", {"name": "ada"}, skip_waits=True)
        assert result.ok, result.cause
        assert result.output == {"greeting": "Hello, ADA!"}
"""

from __future__ import annotations

import contextlib
import heapq
import json
import re
import sys
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from sand_workflows import history
from sand_workflows.engine import (
    AwaitCallback,
    Engine,
    Failed,
    Finished,
    InMemoryStore,
    TaskCall,
    TaskTokenMinter,
    TimerCall,
)
from sand_workflows.tokens import decode_token

from sand.app import AppSpec, WorkflowSpec, load_app
from sand.data import SCOPES, DataStore, Scope
from sand.data.memory import MemoryDataServer
from sand.grain.child import ChildSetup
from sand.grain.context import grain_logger
from sand.grain.pool import DEFAULT_GRACE_S, Ended, Pool
from sand.grain.result import GrainResult, Invocation
from sand.grain.runner import Handler, fork_invocation, load_grain
from sand.mocks import (
    CallAnswers,
    MockedReturn,
    Mocker,
    MockFile,
    MockOutcome,
    TestCase,
    callback_outcome,
    load_mocks,
)

Status = Literal["SUCCEEDED", "FAILED"]
# The longest the loop sleeps with grains running and no timer pending (the pool
# wakes it earlier for any child's end or deadline).
_IDLE_WAIT_S = 1.0


# One event of an execution's history (``sand_workflows.history``): the same keys as the
# events ``GET /v1/executions/{id}/history`` answers on the cluster.
HistoryEvent = dict[str, Any]


@dataclass(frozen=True, slots=True)
class EmulationResult:
    """How an emulated execution ended, with its history: every event of every state
    (``steps``, in order; the event shape of the cluster's history, decision 0018)."""

    execution_id: str
    workflow: str
    status: Status
    output: Any = None
    error: str | None = None
    cause: str | None = None
    steps: tuple[HistoryEvent, ...] = ()
    duration_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "SUCCEEDED"

    def to_json(self) -> Any:
        """The output if it succeeded, else ``{"Error": ..., "Cause": ...}`` (as the CLI prints)."""
        if self.ok:
            return self.output
        return {"Error": self.error, "Cause": self.cause}


class EmulationError(Exception):
    """The emulation could not start: the input is not JSON, or ``mocks`` and ``case`` are
    not given together."""


# What ``emulate(mocks=...)`` takes: a mock file's path, its parsed document, or a loaded one.
Mocks = str | Path | Mapping[str, Any] | MockFile


def emulate(
    app_dir: str | Path,
    input: Any,
    workflow: str | None = None,
    *,
    skip_waits: bool = False,
    trace: Callable[[HistoryEvent], None] | None = None,
    execution_id: str | None = None,
    data: MemoryDataServer | None = None,
    max_concurrency: int | None = None,
    grace_s: float = DEFAULT_GRACE_S,
    mocks: Mocks | None = None,
    case: str | None = None,
) -> EmulationResult:
    """Run ``workflow`` (default: the app's default workflow) of the app in ``app_dir``.

    Blocks until the execution finishes or fails; the result says which. ``input``
    is any JSON value. ``trace`` is called with each history event as it is
    recorded. ``data`` lets a test keep the data layer (it must be started); by
    default each emulation has a fresh one. Grain processes write their stdout to
    stderr. Raises :class:`~sand.app.AppError` for an invalid app and
    :class:`EmulationError` when the input is not JSON. A grain that fails to import
    fails each of its invocations with ``States.Runtime`` naming the import error.

    ``mocks`` (a mock file, see :mod:`sand.mocks`) and ``case`` (one of its test cases for
    this workflow) go together: the grains the case names answer with its canned results
    or errors, without a process; the others run for real. Raises
    :class:`~sand.mocks.MockError` for a mock file or case that cannot be used.
    """
    try:
        json.dumps(input, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise EmulationError(f"input is not a JSON value: {exc}") from None
    app = load_app(app_dir)
    spec = app.workflow(workflow)
    test_case = mock_case(app, spec.name, mocks, case)
    options = EmulationOptions(
        skip_waits=skip_waits,
        max_concurrency=max_concurrency or app.limits.max_concurrency,
        grace_s=grace_s,
        trace=trace,
    )
    result, _ = run_emulation(
        app,
        spec,
        execution_id or str(uuid.uuid4()),
        input,
        options=options,
        data=data,
        mocker=None if test_case is None else Mocker(test_case),
    )
    return result


def run_emulation(
    app: AppSpec,
    spec: WorkflowSpec,
    execution_id: str,
    input: Any,
    *,
    options: EmulationOptions,
    data: MemoryDataServer | None = None,
    mocker: CallAnswers | None = None,
    engine: Engine | None = None,
    begin: Callable[[], list[Any]] | None = None,
) -> tuple[EmulationResult, history.Recorder]:
    """Run one execution of ``spec`` under the emulator; its result and its history.

    The one place that prepares an emulation (data layer, ``sys.path``, grains imported
    once): :func:`emulate` and one-state testing (:mod:`sand.single_state`, which passes
    its own ``engine`` and ``begin``, the call that makes the first actions) use it.
    """
    with contextlib.ExitStack() as stack:
        if data is None:
            data = stack.enter_context(MemoryDataServer())
        stack.enter_context(_on_sys_path(app.root))
        run = _Emulation(
            app=app,
            workflow_name=spec.name,
            definition=spec.definition,
            handlers=_load_handlers(app),
            stores={scope: data.store(app.name, scope) for scope in SCOPES},
            options=options,
            mocker=mocker,
            engine=engine,
        )
        return run.execute(execution_id, input, begin), run.history
    raise AssertionError("unreachable")  # for type checkers: ExitStack may swallow


def mock_case(
    app: AppSpec, workflow: str, mocks: Mocks | None, case: str | None
) -> TestCase | None:
    """The test case ``case`` of ``mocks`` for ``workflow`` of ``app`` (None without
    mocks). Raises EmulationError when only one of the two is given, MockError for a mock
    file or case that cannot be used."""
    if (mocks is None) != (case is None):
        given, missing = ("mocks", "case") if case is None else ("case", "mocks")
        raise EmulationError(f"{given} needs {missing}: give a mock file and one of its test cases")
    if mocks is None or case is None:
        return None
    if not isinstance(mocks, MockFile):
        definitions = {name: w.definition for name, w in app.workflows.items()}
        mocks = load_mocks(mocks, definitions)
    return mocks.case(workflow, case)


@dataclass(frozen=True, slots=True)
class EmulationOptions:
    """How an emulation runs: timers at once (``skip_waits``), grain processes in flight
    at most, the grace after a deadline, and who sees each history event."""

    skip_waits: bool
    max_concurrency: int
    grace_s: float
    trace: Callable[[HistoryEvent], None] | None


@dataclass(frozen=True, slots=True)
class _Running:
    call: TaskCall
    started: float


class _Emulation:
    """One execution: the engine, the grain processes in flight and the timer heap.

    Single-threaded: one loop runs the pool's monitoring loop until a child ends
    or the next timer is due, and feeds every outcome back to the engine.
    """

    def __init__(
        self,
        *,
        app: AppSpec,
        workflow_name: str,
        definition: Any,
        handlers: dict[str, Handler],
        stores: dict[Scope, DataStore],
        options: EmulationOptions,
        mocker: CallAnswers | None = None,
        engine: Engine | None = None,
    ) -> None:
        self.app = app
        self.workflow_name = workflow_name
        self.definition = definition
        self.handlers = handlers
        self.stores = stores
        self.options = options
        self.engine = engine or Engine(
            definition, InMemoryStore(), task_tokens=TaskTokenMinter.local(app.name)
        )
        self.mocker = mocker
        self.pending: deque[TaskCall] = deque()
        # Mocked calls answered but not yet reported to the engine (no process ran them).
        self.answered: deque[tuple[TaskCall, MockOutcome]] = deque()
        # Grain processes are forked with stdout on stderr: the CLI prints results on stdout.
        self.pool = Pool(grace_s=options.grace_s, setup=ChildSetup(stdout_to_stderr=True))
        self.running: dict[int, _Running] = {}  # by pid
        # (due, sequence, token, outcome): the sequence keeps equal dues in order; outcome is
        # None for a Wait's or Retry's timer, else the end of a callback task's wait.
        self.timers: list[tuple[float, int, str, dict[str, Any] | None]] = []
        self.sequence = 0
        self.history = history.Recorder(on_event=options.trace, host="emulator")
        self.t0 = time.monotonic()
        self.execution_id = ""

    def execute(
        self, execution_id: str, input: Any, begin: Callable[[], list[Any]] | None = None
    ) -> EmulationResult:
        """Run the execution to its end. ``begin`` replaces the engine's ``start`` (one-state
        testing enters a single state); it returns the first actions."""
        with history.recording(self.history):
            return self._execute(execution_id, input, begin)

    def _execute(
        self, execution_id: str, input: Any, begin: Callable[[], list[Any]] | None
    ) -> EmulationResult:
        self.t0 = time.monotonic()
        self.execution_id = execution_id
        try:
            started_ms = time.time_ns() // 1_000_000
            if begin is None:
                actions = self.engine.start(execution_id, input, _iso_now())
            else:
                actions = begin()
            history.amend_start(app=self.app.name, name=None, started_ms=started_ms)
            while True:
                outcome = self.apply(actions)
                if outcome is not None:
                    return self.result(execution_id, outcome)
                self.start_pending()
                if not self.running and not self.timers and not self.answered:
                    return self.result(
                        execution_id,
                        Failed(
                            error="States.Runtime",
                            cause="the workflow stopped without finishing or failing "
                            "(no grain running and no timer pending)",
                        ),
                    )
                actions = self.collect(self.wait_for_progress())
        finally:
            self.pool.kill_all()  # none left unless something raised
            self.running.clear()

    def apply(self, actions: list[Any]) -> Finished | Failed | None:
        now = time.monotonic()
        for action in actions:
            if isinstance(action, Finished | Failed):
                return action
            if isinstance(action, TaskCall):
                self.pending.append(action)
            elif isinstance(action, TimerCall):
                self.later(now, float(action.delay_s), action.token, None)
            elif isinstance(action, AwaitCallback):
                sent = None if self.mocker is None else self.mocker.answer_wait(action)
                if sent is not None:
                    self.later(now, 0.0, action.token, sent)
                else:
                    self.later(now, *_unanswered(action, self.options.skip_waits))
            else:
                raise TypeError(f"the engine returned an unknown action {action!r}")
        return None

    def later(self, now: float, delay: float, token: str, outcome: dict[str, Any] | None) -> None:
        delay = 0.0 if self.options.skip_waits else max(0.0, delay)
        self.sequence += 1
        heapq.heappush(self.timers, (now + delay, self.sequence, token, outcome))

    def start_pending(self) -> None:
        while self.pending:
            if self.answer_mocked(self.pending[0]):
                self.pending.popleft()
                continue
            if len(self.running) >= self.options.max_concurrency:
                return
            call = self.pending.popleft()
            invocation = self.invocation(call)
            handler = self.handlers[call.grain]
            child = fork_invocation(self.pool, handler, invocation, self.stores)
            history.emit_for_token("TaskStarted", call.token, grain=call.grain, pid=child.pid)
            self.running[child.pid] = _Running(call=call, started=child.started)

    def answer_mocked(self, call: TaskCall) -> bool:
        """Answer ``call`` from the test case if it names the call's state or grain (no
        process is forked); whether it did. The answer reaches the engine in ``collect``,
        as a grain's end would."""
        if self.mocker is None:
            return False
        answer = self.mocker.answer_call(call)
        if answer is None:
            return False
        response, outcome = answer
        history.emit_for_token(
            "TaskStarted", call.token, grain=call.grain, mocked=True, response=response
        )
        self.answered.append((call, outcome))
        return True

    def invocation(self, call: TaskCall) -> Invocation:
        limits = self.app.limits
        timeout_s = limits.timeout_s
        if call.timeout_s is not None:
            timeout_s = min(timeout_s, float(call.timeout_s))
        potential: frozenset[str] = frozenset()
        if getattr(self.definition, "kind", None) == "native":
            state = self.definition.states.get(call.grain)
            if state is not None:
                potential = frozenset(state.potential_next)
        return Invocation(
            app_name=self.app.name,
            grain_name=call.grain,
            execution_id=self.execution_id,
            input=call.input,
            timeout_s=timeout_s,
            payload_limit_bytes=limits.payload_bytes,
            potential_next=potential,
            state=call.context if isinstance(call.context, dict) else {},
        )

    def wait_for_progress(self) -> list[Ended]:
        """One turn of the pool's loop, no longer than until the next timer is due."""
        timeout = _IDLE_WAIT_S
        if self.answered:
            timeout = 0.0
        elif self.timers:
            timeout = max(0.0, self.timers[0][0] - time.monotonic())
        return self.pool.wait(timeout)

    def collect(self, ended: list[Ended]) -> list[Any]:
        """Feed every ended grain and every due timer to the engine; the actions it returns."""
        actions: list[Any] = []
        while self.answered:
            call, outcome = self.answered.popleft()
            if decode_token(call.token).callback is not None:
                # a mocked callback task: its mock is the outcome sent with its token
                actions.extend(self.engine.callback_ended(call.token, callback_outcome(outcome)))
            elif isinstance(outcome, MockedReturn):
                actions.extend(self.engine.task_succeeded(call.token, outcome.output))
            else:
                actions.extend(self.engine.task_failed(call.token, outcome.error, outcome.cause))
        for end in ended:
            running = self.running.pop(end.child.pid)
            result = end.outcome()
            self.log_failure(running, result)
            token = running.call.token
            if result.ok:
                next_grains = None if result.next_grains is None else list(result.next_grains)
                actions.extend(self.engine.task_succeeded(token, result.output, next_grains))
            else:
                actions.extend(
                    self.engine.task_failed(token, result.error or "", result.cause or "")
                )
        now = time.monotonic()
        while self.timers and self.timers[0][0] <= now:
            _, _, token, waited = heapq.heappop(self.timers)
            if waited is None:
                actions.extend(self.engine.timer_fired(token))
            else:
                actions.extend(self.engine.callback_ended(token, waited))
        return actions

    def log_failure(self, running: _Running, result: GrainResult) -> None:
        call = running.call
        if result.error is not None:
            # For the developer, not the workflow: logged where the grain's own logs go.
            logger = grain_logger(self.execution_id, self.app.name, call.grain)
            logger.warning("grain failed with %s: %s", result.error, result.cause)
            if result.traceback:
                logger.debug("traceback of the failure:\n%s", result.traceback.rstrip())

    def result(self, execution_id: str, outcome: Finished | Failed) -> EmulationResult:
        duration_ms = (time.monotonic() - self.t0) * 1000
        if isinstance(outcome, Finished):
            return EmulationResult(
                execution_id=execution_id,
                workflow=self.workflow_name,
                status="SUCCEEDED",
                output=outcome.output,
                steps=tuple(self.history.events),
                duration_ms=duration_ms,
            )
        return EmulationResult(
            execution_id=execution_id,
            workflow=self.workflow_name,
            status="FAILED",
            error=outcome.error,
            cause=outcome.cause,
            steps=tuple(self.history.events),
            duration_ms=duration_ms,
        )


def _unanswered(wait: AwaitCallback, at_once: bool) -> tuple[float, str, dict[str, str]]:
    """When and how an unmocked callback task's wait ends in the emulator, where nobody
    holds its token: at its TimeoutSeconds, or its HeartbeatSeconds if sooner."""
    left = wait.timeout_at_ms / 1000 - time.time()
    if wait.heartbeat_ms and wait.heartbeat_ms / 1000 < left:
        error, delay, what = "States.HeartbeatTimeout", wait.heartbeat_ms / 1000, "HeartbeatSeconds"
    else:
        error, delay, what = "States.Timeout", left, "TimeoutSeconds"
    when = "now (--no-wait)" if at_once else f"in {max(0.0, delay):.0f} s"
    print(
        f"a callback task waits for its token ({wait.task_token[:24]}...): nothing sends one in"
        f" the emulator, so it ends with {error} {when}; mock the state to give the callback's"
        " outcome",
        file=sys.stderr,
    )
    cause = f"no callback within its {what} (emulator: mock the state to answer it)"
    return delay, wait.token, {"error": error, "cause": cause}


def _load_handlers(app: AppSpec) -> dict[str, Handler]:
    """Import every grain once, here in the parent, so that each fork starts warm. A grain
    that fails to import fails each of its invocations with States.Runtime (as on the
    cluster): a workflow that does not use it runs."""
    handlers: dict[str, Handler] = {}
    for name, grain in app.grains.items():
        module_name = "sand_app_" + re.sub(r"\W", "_", f"{app.name}__{name}")
        handlers[name], _ = load_grain(name, grain.path, module_name)
    return handlers


@contextlib.contextmanager
def _on_sys_path(root: Path) -> Iterator[None]:
    """Let grains import helper modules that sit in the app directory."""
    entry = str(root)
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(entry)


def _iso_now() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
