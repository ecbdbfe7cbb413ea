"""The step interpreter (decision 0002): pure, never runs user code, never sleeps.

Each entry point takes a token (or an execution's input), advances the execution through
every state that needs no outside work (Pass, Choice, Succeed, Fail, entering Parallel or
Map, input/output processing) and returns the actions the driver must perform:
``TaskCall`` (run a grain), ``TimerCall`` (call ``timer_fired`` later), ``Finished`` or
``Failed``. Everything a later step needs travels in the token (``tokens.Token``);
fan-out bookkeeping lives in the ``ExecutionStore``.

Where the parts are: entering Task, Pass, Choice and Wait states in ``states``,
input/output processing in ``dataflow``, Retry/Catch decisions in ``recovery``,
Parallel/Map groups in ``groups``, the native format in ``native``.

Thread-safety: an Engine holds no mutable state of its own; several threads (or hosts)
may call it concurrently for the same execution as long as they share the store.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from . import errors, history
from .actions import Action, AwaitCallback, Failed, Finished, TaskCall, TimerCall
from .dataflow import (
    ContextObject,
    assign_variables,
    context_object,
    finish_result,
    input_path,
    jsonata_states,
    now_iso,
    output,
    output_path,
)
from .errors import StatesError
from .groups import GroupRunner
from .model import (
    ChoiceState,
    FailState,
    FlowState,
    MapState,
    ParallelState,
    PassState,
    RecoverableState,
    State,
    SucceedState,
    TaskState,
    WaitState,
    Workflow,
    WorkflowKind,
)
from .native import NativeRunner
from .recovery import Caught, RetryLater, recover
from .states import StateRunner
from .steps import Done, Entry, Goto, Step
from .store import Claim, ExecutionStore, InMemoryStore, RecordOutcome
from .task_tokens import TaskTokenMinter
from .tokens import (
    Execution,
    Lineage,
    Token,
    TokenKind,
    decode_token,
    encode_token,
    end_guard_id,
    restart_guard_id,
)

_S = TypeVar("_S", bound=State)


@dataclass(frozen=True, slots=True)
class Redrive:
    """Run a failed execution again from ``state`` (top-level), entered with ``input`` and
    the ``variables`` it had then; ``count`` is this redrive's number (1 for the first).

    ``kept``: when ``state`` is a Parallel or Map, the outputs of its branches or items
    that succeeded in the runs before, per slot. Only the others run again (the service's
    RedriveExecution: "redrives only the iterations and branches that failed or aborted")."""

    state: str
    input: Any
    count: int
    variables: Mapping[str, Any] = field(default_factory=dict)
    kept: Mapping[int, Any] = field(default_factory=dict)


__all__ = [
    "Action",
    "AwaitCallback",
    "Claim",
    "Engine",
    "ExecutionStore",
    "Failed",
    "Finished",
    "InMemoryStore",
    "RecordOutcome",
    "Redrive",
    "TaskCall",
    "TaskTokenMinter",
    "TimerCall",
]

# The errors a callback task's wait ends with when nobody answers (decision 0033).
_WAIT_ERRORS = (errors.TIMEOUT, errors.HEARTBEAT_TIMEOUT)


class Engine:
    """Interpreter of one workflow. See module docstring and README "Engine API".

    ``clock`` returns the current aware datetime (State.EnteredTime, Wait Timestamp);
    ``rng`` draws retry jitter; ``task_tokens`` mints the task tokens of callback tasks
    (default: a key of its own, for drivers whose tokens nobody checks).
    ``max_inline_steps`` bounds the states entered in one call without outside work, so a
    loop of Pass/Choice states fails with States.Runtime instead of spinning.
    """

    def __init__(
        self,
        workflow: Workflow,
        store: ExecutionStore,
        *,
        clock: Callable[[], datetime] | None = None,
        rng: random.Random | None = None,
        task_tokens: TaskTokenMinter | None = None,
        max_inline_steps: int = 10_000,
    ) -> None:
        self.wf = workflow
        self.store = store
        self.clock = clock or (lambda: datetime.now(UTC))
        self.rng = rng or random.Random()
        self.task_tokens = task_tokens or TaskTokenMinter.local(workflow.name)
        self.max_inline_steps = max_inline_steps
        self._native = NativeRunner(workflow, store, self.clock)
        self._groups = GroupRunner(self)
        self._states = StateRunner(self)

    # -- public API ------------------------------------------------------------------------
    def start(
        self,
        execution_id: str,
        input: Any,
        start_time_iso: str | None = None,
        *,
        redrive: Redrive | None = None,
    ) -> list[Action]:
        """Begin an execution; ``start_time_iso`` becomes ``$$.Execution.StartTime``.

        With ``redrive``, run a failed execution again from the state that failed
        (``redrive.state``, entered with ``redrive.input``, retry counts from zero);
        ``input`` and ``start_time_iso`` stay the original execution's (``$$.Execution``).
        Raises ValueError for a native workflow or a state that is not a top-level one.
        """
        start_time = start_time_iso or now_iso(self.clock)
        if redrive is not None:
            return self._redrive(execution_id, input, start_time, redrive)
        return self._begin(Execution(execution_id, input, start_time))

    def _begin(self, execution: Execution) -> list[Action]:
        """Run ``execution`` from its workflow's start."""
        lin = Lineage(execution)
        history.emit("ExecutionStarted", lin, None, input=execution.input, workflow=self.wf.name)
        if self.wf.kind == WorkflowKind.NATIVE:
            return self._native.start(lin, execution.input)
        return self.drive(Goto(self.wf.start_at, execution.input, lin))

    def _redrive(
        self, execution_id: str, input: Any, start_time: str, redrive: Redrive
    ) -> list[Action]:
        if self.wf.kind == WorkflowKind.NATIVE:
            raise ValueError(
                f"workflow '{self.wf.name}' is in the native format: only ASL executions can be"
                " redriven (invoke it again instead)"
            )
        if redrive.state not in self.wf.top_level:
            raise ValueError(
                f"workflow '{self.wf.name}' has no top-level state '{redrive.state}' to redrive"
                " from"
            )
        # a run of its own: its Parallel/Map groups are not the closed ones of the run before
        execution = Execution(execution_id, input, start_time, redrive.count, now_iso(self.clock))
        lin = Lineage(execution)
        history.emit(
            "ExecutionRedriven",
            lin,
            None,
            from_state=redrive.state,
            input=redrive.input,
            redrive_count=redrive.count,
        )
        lin = lin.with_variables(dict(redrive.variables))
        # only a Parallel or Map entry reads ``kept`` (GroupRunner); any other state ignores it
        return self.drive(Goto(redrive.state, redrive.input, lin, kept=redrive.kept))

    def task_succeeded(
        self, token: str, output: Any, next_grains: Sequence[str] | None = None
    ) -> list[Action]:
        """The TaskCall of ``token`` returned ``output``.

        ``next_grains`` is the native dynamic next (grains picked among ``potentialNext``).
        Returns ``[]`` when the token belongs to a branch of a failed Parallel/Map or a
        finished native execution. A callback task's grain returning only submits the task:
        the answer is an ``AwaitCallback``. Raises ValueError for a token that is not a
        TaskCall's.
        """
        tok = self._task_token(token)
        if tok.callback is not None:
            return self._await_callback(tok, token, output)
        history.emit("TaskSucceeded", tok.lineage, tok.state, output=output)
        if self.wf.kind == WorkflowKind.NATIVE:
            return self._native_end(tok.lineage, self._native.succeeded(tok, output, next_grains))
        return self._task_result(tok, output)

    def _task_result(self, tok: Token, output: Any) -> list[Action]:
        """Finish the Task of ``tok`` with its result ``output``."""
        if not self._alive(tok.lineage):
            return []
        st = self.state_named(tok.state, TaskState)
        history.step("result", output)
        ctx = self.context(tok.lineage, st, tok.entered_time, tok.retry_counts)
        try:
            out, lin = finish_result(st, tok.raw_input, output, ctx, tok.lineage)
        except StatesError as exc:
            return self.drive(
                self.state_error(st, tok.raw_input, tok.lineage, tok.retry_counts, exc)
            )
        return self.drive(self.after(st, out, lin))

    def task_failed(self, token: str, error: str, cause: str) -> list[Action]:
        """The TaskCall of ``token`` failed with ``error`` (an error name) and ``cause``."""
        tok = self._task_token(token)
        history.emit("TaskFailed", tok.lineage, tok.state, error=error, cause=cause)
        if self.wf.kind == WorkflowKind.NATIVE:
            return self._native_end(tok.lineage, self._native.failed(tok, error, cause))
        return self._task_error(tok, error, cause)

    def _task_error(self, tok: Token, error: str, cause: str) -> list[Action]:
        if not self._alive(tok.lineage):
            return []
        st = self.state_named(tok.state, TaskState)
        failure = StatesError(error, cause)
        return self.drive(
            self.state_error(st, tok.raw_input, tok.lineage, tok.retry_counts, failure)
        )

    def _await_callback(self, tok: Token, token: str, output: Any) -> list[Action]:
        assert tok.callback is not None
        cb = tok.callback
        history.emit(
            "TaskSubmitted",
            tok.lineage,
            tok.state,
            output=output,
            task_token=cb.task_token,
            timeout_at=cb.timeout_at_ms,
            heartbeat_s=cb.heartbeat_ms // 1000,
        )
        if not self._alive(tok.lineage):
            return []
        return [AwaitCallback(token, cb.task_token, cb.timeout_at_ms, cb.heartbeat_ms)]

    def callback_ended(self, token: str, outcome: Mapping[str, Any]) -> list[Action]:
        """The wait of the callback task of ``token`` (an ``AwaitCallback``'s) ended with
        ``outcome``: ``{"output": value}`` sent with its task token, or ``{"error": name,
        "cause": text}`` sent as a failure or made by the timeout (States.Timeout,
        States.HeartbeatTimeout): Retry and Catch see it as the task's error."""
        tok = self._task_token(token)
        if tok.callback is None:
            raise ValueError(f"token of state '{tok.state}' is not a callback task's")
        if "output" in outcome:
            history.emit("TaskSucceeded", tok.lineage, tok.state, output=outcome["output"])
            return self._task_result(tok, outcome["output"])
        error = str(outcome.get("error") or errors.TASK_FAILED)
        cause = str(outcome.get("cause") or "")
        kind = "TaskTimedOut" if error in _WAIT_ERRORS else "TaskFailed"
        history.emit(kind, tok.lineage, tok.state, error=error, cause=cause)
        return self._task_error(tok, error, cause)

    def timer_fired(self, token: str) -> list[Action]:
        """The TimerCall of ``token`` is due (a Wait ended, or a Retry delay passed)."""
        tok = decode_token(token)
        if not self._alive(tok.lineage):
            return []
        if tok.kind == TokenKind.RETRY:
            st = self.state_named(tok.state, RecoverableState)
            return self.drive(Goto(st.name, tok.raw_input, tok.lineage, tok.retry_counts))
        if tok.kind == TokenKind.WAIT:
            history.emit("WaitEnded", tok.lineage, tok.state)
            return self.drive(
                self.after(self.state_named(tok.state, WaitState), tok.output, tok.lineage)
            )
        raise ValueError(f"token of kind {tok.kind.value!r} is not a timer token")

    def replayed(self, token: str) -> list[Action] | None:
        """Check the token of an event replayed after the host that had it was lost.

        A token inside a Parallel/Map run (or of a concurrent native execution) depends on
        groups of the store, which live on the host that opened them. Returns None when
        every such group is known to this store (or there is none): handle the event as
        usual. Otherwise that state was lost with its host, and no event can finish the run
        it belonged to: the first caller per execution gets the actions that run the
        execution again from its input (same id, input and start time; the grains before
        the fan-out run again too, decision 0015), every later caller ``[]`` (the rerun
        covers its work). Events of the lost run that arrive once the rerun opened their
        group are handled as usual: a slot takes the first result that reaches it.
        """
        tok = decode_token(token)
        execution = tok.lineage.execution
        if self.wf.kind == WorkflowKind.NATIVE:
            needed = [end_guard_id(execution.id)] if self.wf.concurrent else []
        else:
            needed = tok.lineage.group_ids()
        if not needed or self.store.known(needed):
            return None
        guard = restart_guard_id(execution)
        self.store.open_group(guard, 1, "{}")
        if self.store.close_group(guard) is None:
            return []  # another replayed event of this run restarted it here
        # the same run again (a redrive's too: its number keeps naming its groups)
        return self._begin(execution)

    # -- driving -------------------------------------------------------------------------
    def drive(self, step: Step) -> list[Action]:
        """Enter states until one needs outside work; the actions for that work."""
        inline = 0
        while isinstance(step, Goto):
            inline += 1
            if inline > self.max_inline_steps:
                step = self._groups.raise_error(
                    step.lineage,
                    errors.RUNTIME,
                    f"more than {self.max_inline_steps} states entered without running a task;"
                    f" last state '{step.state}'",
                )
                continue
            st = self.wf.states[step.state]
            lin = step.lineage.entered()
            if lin.variables and history.active():
                history.emit(
                    "StateEntered", lin, st.name, input=step.input, variables=lin.variables
                )
            else:
                history.emit("StateEntered", lin, st.name, input=step.input)
            entered = now_iso(self.clock)
            ctx = self.context(lin, st, entered, step.retry_counts)
            entry = Entry(step.input, lin, step.retry_counts, ctx, entered, step.kept)
            try:
                step = self._enter(st, entry)
            except StatesError as exc:
                # Errors of the state's own processing go through its Retry/Catch.
                step = self.state_error(st, entry.raw_input, lin, entry.retry_counts, exc)
        return step.actions

    def _enter(self, st: State, entry: Entry) -> Step:
        raw, lin, ctx = entry.raw_input, entry.lineage, entry.context
        match st:
            case TaskState():
                return self._states.enter_task(st, entry)
            case PassState():
                return self._states.enter_pass(st, entry)
            case ChoiceState():
                return self._states.enter_choice(st, entry)
            case WaitState():
                return self._states.enter_wait(st, entry)
            case SucceedState():
                if st.jsonata:
                    out = output(st, jsonata_states(raw, ctx), lin, default=raw)
                else:
                    out = output_path(st, input_path(st, raw, ctx), ctx)
                self.exited(st, out, lin)
                return self._groups.finish(lin, out)
            case FailState():
                error, cause = self._states.fail_error(st, raw, ctx)
                history.emit("StateFailed", lin, st.name, error=error, cause=cause)
                return self._groups.raise_error(lin, error, cause)
            case ParallelState():
                return self._groups.enter_parallel(st, entry)
            case MapState():
                return self._groups.enter_map(st, entry)
        raise StatesError(
            errors.RUNTIME, f"state '{st.name}' has unsupported type {type(st).__name__}"
        )

    def after(self, st: FlowState, output: Any, lin: Lineage) -> Step:
        """``st`` produced ``output``: go to its Next, or end the branch/execution."""
        self.exited(st, output, lin, next=st.next)
        if st.end or st.next is None:
            return self._groups.finish(lin, output)
        return Goto(st.next, output, lin)

    # -- errors ------------------------------------------------------------------------------
    def state_error(
        self, st: State, raw: Any, lin: Lineage, rc: tuple[int, ...], exc: StatesError
    ) -> Step:
        """Retry, then Catch, then propagate (spec "Retrying after error", "Fallback states")."""
        decision = recover(st, raw, rc, exc.error, exc.cause, self.rng)
        if isinstance(decision, RetryLater):
            history.emit(
                "RetryScheduled",
                lin,
                st.name,
                error=exc.error,
                cause=exc.cause,
                delay_s=decision.delay_s,
                retry=sum(decision.retry_counts),
            )
            token = Token(
                kind=TokenKind.RETRY,
                state=st.name,
                lineage=lin,
                raw_input=raw,
                retry_counts=decision.retry_counts,
            )
            return Done([TimerCall(decision.delay_s, encode_token(token))])
        if isinstance(decision, Caught):
            try:
                out, after = self._caught(st, raw, lin, rc, decision)
            except StatesError as failure:
                # The Catcher's own Assign/Output failed: that error leaves the state.
                self._caught_event(lin, st, exc, decision)
                history.emit("StateFailed", lin, st.name, error=failure.error, cause=failure.cause)
                return self._groups.raise_error(lin, failure.error, failure.cause)
            self._caught_event(lin, st, exc, decision)
            return Goto(decision.next, out, after)
        history.emit("StateFailed", lin, st.name, error=decision.error, cause=decision.cause)
        return self._groups.raise_error(lin, decision.error, decision.cause)

    @staticmethod
    def _caught_event(lin: Lineage, st: State, exc: StatesError, decision: Caught) -> None:
        # The steps so far (a Catcher's variables, what the state did before it failed)
        # belong to this event, not to the next state's.
        steps = history.take_steps() if history.active() else {}
        extra = {"steps": steps} if steps else {}
        history.emit(
            "Caught", lin, st.name, error=exc.error, cause=exc.cause, next=decision.next, **extra
        )

    def _caught(
        self, st: State, raw: Any, lin: Lineage, rc: tuple[int, ...], decision: Caught
    ) -> tuple[Any, Lineage]:
        """The output a Catcher passes on, and the lineage once its Assign took effect."""
        catcher = decision.catcher
        if catcher.assign is None and catcher.output is None:
            return decision.output, lin
        ctx = self.context(lin, st, now_iso(self.clock), rc)
        if st.jsonata:
            states = {"input": raw, "errorOutput": decision.error_output, "context": ctx}
            after = assign_variables(st, catcher.assign, lin, ctx, states=states)
            out = decision.output
            if catcher.output is not None:
                out = catcher.output.evaluate(st.name, "Catch.Output", states, lin.variables)
            return out, after
        after = assign_variables(st, catcher.assign, lin, ctx, data=decision.error_output)
        return decision.output, after

    # -- helpers -----------------------------------------------------------------------------
    def exited(self, st: State, output: Any, lin: Lineage, next: str | None = None) -> None:
        """Record that ``st`` ended with ``output`` (going on to ``next``, if any)."""
        if history.active():
            history.emit(
                "StateExited", lin, st.name, output=output, next=next, steps=history.take_steps()
            )

    def _native_end(self, lin: Lineage, actions: list[Action]) -> list[Action]:
        """A native step's actions, with the execution's end recorded when it is one."""
        for action in actions:
            if isinstance(action, Finished):
                history.emit("ExecutionSucceeded", lin, None, output=action.output)
            elif isinstance(action, Failed):
                history.emit("ExecutionFailed", lin, None, error=action.error, cause=action.cause)
        return actions

    def context(self, lin: Lineage, st: State, entered: str, rc: tuple[int, ...]) -> ContextObject:
        return context_object(self.wf, lin, st, entered, rc)

    def _alive(self, lin: Lineage) -> bool:
        return not lin.frames or self.store.is_open(lin.group_ids())

    def _task_token(self, token: str) -> Token:
        tok = decode_token(token)
        expected = TokenKind.NATIVE if self.wf.kind == WorkflowKind.NATIVE else TokenKind.TASK
        if tok.kind != expected:
            raise ValueError(f"token of kind {tok.kind.value!r} is not a {expected.value} token")
        return tok

    def state_named(self, name: str, cls: type[_S]) -> _S:
        """The state a token names, which must be a ``cls``; ValueError otherwise."""
        st = self.wf.states.get(name)
        if not isinstance(st, cls):
            raise ValueError(
                f"token names state '{name}', which is no {cls.__name__} of '{self.wf.name}'"
            )
        return st
