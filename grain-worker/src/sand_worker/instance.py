"""What a grain worker does with one event: step the workflow, run the grain, route.

Split where the grain's own code runs (decision 0029): the grain worker takes the
event, drives ``sand_workflows.engine.Engine`` up to the task of its grain
(:meth:`EventHandler.begin`) and hands that task to a forked instance, which runs
only the grain (:meth:`EventHandler.run_task`). With the result (or the explained
failure of an instance that died) the worker finishes the step
(:meth:`EventHandler.complete`) and writes every resulting event to the local bus
in one pipeline (:mod:`sand_worker.routing`). Plain code: no fork here.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from sand import keys
from sand.app import AppSpec
from sand.contracts import (
    HEADER_CALLBACK_OUTCOME,
    HEADER_REDRIVE_COUNT,
    HEADER_REDRIVE_INPUT,
    HEADER_REDRIVE_KEPT,
    HEADER_REDRIVE_STATE,
    HEADER_REDRIVE_VARIABLES,
)
from sand.data import DataStore, Scope
from sand.data.agent import AgentDataStore
from sand.data.redis import RedisDataStore
from sand.data.written import RecordingDataStore, header_value
from sand.grain.result import GrainResult, Invocation, encode_result
from sand.grain.runner import Handler, invoke
from sand.localbus import LocalBus
from sand_workflows import history
from sand_workflows.engine import (
    Action,
    Engine,
    Failed,
    Redrive,
    TaskCall,
    TaskTokenMinter,
)
from sand_workflows.model import GrainState
from sand_workflows.tokens import decode_token

from sand_worker.bus import (
    EventKind,
    EventMessage,
    decode,
    payload_of,
    started_by,
)
from sand_worker.config import WorkerConfig
from sand_worker.logtag import line_prefix, tagged, tagged_output
from sand_worker.metrics import GrainMetrics
from sand_worker.routing import CONTEXT_HEADER, TIMEOUT_HEADER, Outbox, Router, run_of
from sand_worker.store import RedisExecutionStore
from sand_worker.trace import Trace


@dataclass(frozen=True, slots=True)
class Grain:
    """The grain this worker serves, loaded once in the parent."""

    app: AppSpec
    name: str
    handler: Handler
    broken: str | None = None  # why the grain's file cannot be imported (handler fails all)

    @property
    def events_per_instance(self) -> int:
        """How many events one instance serves before it exits (1: fork per event)."""
        return self.app.grains[self.name].events_per_instance


@dataclass(slots=True)
class Step:
    """One event being handled: what its handling has recorded so far."""

    raw: bytes
    message: EventMessage
    engine: Engine
    recorder: history.Recorder | None
    trace: Trace | None


@dataclass(slots=True)
class Pending:
    """An event whose handling waits for a task of this grain to run in an instance."""

    step: Step
    call: TaskCall
    before: list[Action]  # actions of the step that led to the task, sent with its result
    task: bytes  # the body of the instance's TASK frame (:meth:`EventHandler.run_task`)
    timeout_s: float
    path: str  # where the task runs (``history.path_of``): its lines' ``path=`` tag

    @property
    def raw(self) -> bytes:
        return self.step.raw


class EventHandler:
    """Handles events for one grain: the bus and workflow work in the grain worker
    (:meth:`begin`, :meth:`complete`), the grain's own code in a forked instance
    (:meth:`run_task`)."""

    def __init__(self, grain: Grain, config: WorkerConfig, client: LocalBus) -> None:
        self._grain = grain
        self._config = config
        self._client = client
        store = RedisExecutionStore(client, config.app)
        # the agent hands the app its key (decision 0033); without one (a worker run by hand)
        # the tokens are the worker's own, and no agent accepts them
        minter = (
            TaskTokenMinter(config.app, config.task_token_key)
            if config.task_token_key
            else TaskTokenMinter.local(config.app)
        )
        self._engines = {
            name: Engine(spec.definition, store, task_tokens=minter)
            for name, spec in grain.app.workflows.items()
        }
        self._metrics = GrainMetrics(config.app, grain.name)
        self._router = Router(grain.name, config, client)
        # what the grain writes to the global layer goes with the event's FINISHED flag
        self._global = RecordingDataStore(AgentDataStore(client, config.app))
        self._stores: Mapping[Scope, DataStore] = {
            "local": RedisDataStore(client, config.app, "local"),
            "global": self._global,
        }

    @property
    def client(self) -> LocalBus:
        """The Redis client (fork-safe: a child gets its own connection on first use)."""
        return self._client

    # -- in the grain worker ------------------------------------------------------------

    def begin(self, raw: bytes) -> Pending | None:
        """Handle event ``raw`` up to the task of this grain it asks for, if any: None when
        it was handled whole (everything it produced is sent), else the task to run in an
        instance, then pass to :meth:`complete` with its result."""
        message = decode(raw)
        step = Step(
            raw=raw,
            message=message,
            engine=self._engine(message),
            recorder=self._recorder(),
            trace=Trace.from_headers(
                message.headers,
                self._grain.name,
                EventKind._VALUES_TO_NAMES.get(message.kind, "?"),
                message.created_ms,
            ),
        )
        with history.recording(step.recorder):
            engine = step.engine
            restart = self._lost_fan_out(engine, message)
            if restart is not None:
                actions = restart
            elif message.kind == EventKind.TASK:
                call = TaskCall(
                    grain=message.target_grain,
                    input=payload_of(message),
                    token=message.token,
                    timeout_s=_float((message.headers or {}).get(TIMEOUT_HEADER)),
                    context=json.loads((message.headers or {}).get(CONTEXT_HEADER) or "{}"),
                )
                return self._pending(step, call, before=[])
            else:
                if message.kind == EventKind.INVOKE:
                    actions = self._start(engine, message)
                elif message.kind == EventKind.TIMER:
                    outcome = (message.headers or {}).get(HEADER_CALLBACK_OUTCOME)
                    if outcome is not None:
                        # a callback task's wait ended (decision 0033)
                        actions = engine.callback_ended(message.token, json.loads(outcome))
                    else:
                        actions = engine.timer_fired(message.token)
                else:
                    raise ValueError(f"a grain queue cannot take an event of kind {message.kind}")
                inline = next(
                    (a for a in actions if isinstance(a, TaskCall) and a.grain == self._grain.name),
                    None,
                )
                if inline is not None:
                    # Run our own first task here instead of queueing it: one hop less.
                    return self._pending(
                        step, inline, before=[a for a in actions if a is not inline]
                    )
        self._send(step, actions, None, None)
        return None

    def complete(self, pending: Pending, result: GrainResult, wrote: str | None) -> None:
        """Go on with the event of ``pending`` now that its task gave ``result`` (the
        instance's, or the explained failure of one that died), ``wrote`` being what the
        grain wrote to the global data layer."""
        step, token = pending.step, pending.call.token
        with history.recording(step.recorder):
            if step.trace is not None:
                step.trace.ended()
            if result.ok:
                actions = step.engine.task_succeeded(token, result.output, result.next_grains)
            else:
                if result.traceback:
                    text = f"error={result.error}\n{result.traceback}"
                    print(
                        tagged(step.message.execution_id, self._grain.name, text, pending.path),
                        file=sys.stderr,
                        flush=True,
                    )
                actions = step.engine.task_failed(
                    token, result.error or "States.TaskFailed", result.cause or ""
                )
        self._send(step, pending.before + actions, result, wrote)

    def fail_event(self, raw: bytes, result: GrainResult) -> None:
        """End the execution of an event that could not be handled (it did not decode, or
        its step raised) with ``result``'s failure."""
        message = decode(raw)
        step = Step(raw, message, self._engine(message), self._recorder(), None)
        error = result.error or "States.Runtime"
        with history.recording(step.recorder):
            history.emit_execution(
                "ExecutionFailed", message.execution_id, error=error, cause=result.cause or ""
            )
        self._send(step, [Failed(error, result.cause or "")], None, None)

    def drop(self, raw: bytes, pending: Pending | None = None) -> None:
        """End an event of a stopped execution (decision 0018) without handling it: only its
        FINISHED copy goes out, so no host replays it and nothing follows from it.

        With ``pending`` (its task waited for an instance, or was killed in one), the history
        its step recorded up to the task goes too: a start's or a redrive's first events
        (``ExecutionRedriven`` gives the listing its run number) when that first task was
        the one stopped."""
        message = decode(raw)
        out = Outbox()
        self._router.finished(message, out, None)
        if pending is not None:
            self._router.history(pending.step.recorder, pending.step.message, out)
        out.send(self._client, keys.agent_key(self._config.host_id))

    # -- in an instance ------------------------------------------------------------------

    def warm_up_task(self) -> None:
        """Run a task's path once with a handler that only echoes its input: an instance
        forked ahead of its task does this while it waits, so that the pages the path
        writes are its own before the task arrives, not copied on the task's way."""
        task = {
            "execution_id": "warm-up",
            "input": {"warm": [1, 2.0, None, True, "up"]},
            "timeout_s": 1.0,
            "potential_next": [],
            "context": {},
        }
        result, _ = self.run_task(json.dumps(task).encode(), lambda event, context: event)
        encode_result(result)

    def run_task(
        self, task: bytes, handler: Handler | None = None
    ) -> tuple[GrainResult, str | None]:
        """Run the grain (or ``handler``) on the task of a TASK frame (built by
        :meth:`begin`); returns its result and what it wrote to the global data layer (the
        ``sand-data`` header)."""
        doc = json.loads(task)
        invocation = Invocation(
            app_name=self._config.app,
            grain_name=self._grain.name,
            execution_id=doc["execution_id"],
            input=doc["input"],
            timeout_s=doc["timeout_s"],
            payload_limit_bytes=self._grain.app.limits.payload_bytes,
            potential_next=frozenset(doc["potential_next"]),
            state=doc["context"],
        )
        self._global.take()  # a reused instance: the notes of the previous task were sent
        with tagged_output(invocation.execution_id, self._grain.name, doc.get("path", "")):
            result = invoke(handler or self._grain.handler, invocation, self._stores)
        written = self._global.take()
        return result, header_value(written) if written else None

    # -- the steps -----------------------------------------------------------------------

    def _pending(self, step: Step, call: TaskCall, *, before: list[Action]) -> Pending:
        """The task ``call`` of this grain, to run in an instance (recorded as started)."""
        limits = self._grain.app.limits
        timeout_s = min(call.timeout_s or limits.timeout_s, limits.timeout_s)
        state = step.engine.wf.states.get(self._grain.name)
        potential_next = state.potential_next if isinstance(state, GrainState) else ()
        token = decode_token(call.token)
        path = history.path_of(token.lineage)
        task = {
            "execution_id": step.message.execution_id,
            "input": call.input,
            "timeout_s": timeout_s,
            "potential_next": sorted(potential_next),
            "context": call.context,
            "path": path,
        }
        if step.trace is not None:
            step.trace.started()
        history.emit(
            "TaskStarted",
            token.lineage,
            token.state,
            grain=self._grain.name,
            attempt=step.message.attempt,
        )
        return Pending(step, call, before, json.dumps(task).encode(), timeout_s, path)

    def _send(
        self, step: Step, actions: list[Action], result: GrainResult | None, wrote: str | None
    ) -> None:
        """Everything ``actions`` produce, the event's FINISHED copy, its metrics and its
        history, to the local bus in one pipeline."""
        out = Outbox()
        with history.recording(step.recorder):
            self._router.dispatch(step.message, step.trace, actions, out)
        self._router.finished(step.message, out, wrote)
        self._metrics.record(out.later, result)
        self._router.history(step.recorder, step.message, out)
        out.send(self._client, keys.agent_key(self._config.host_id))

    def _recorder(self) -> history.Recorder | None:
        """Where this step's history goes; None when the app records none (decision 0018)."""
        if not self._grain.app.history:
            return None
        return history.Recorder(host=self._config.host_id, pid=os.getpid())

    def _start(self, engine: Engine, message: EventMessage) -> list[Action]:
        """Begin the execution of an INVOKE event, or run it again from the state that
        failed when the event is a redrive (headers ``sand-redrive-*``)."""
        headers = message.headers or {}
        started_ms, _ = run_of(message)
        assert started_ms is not None  # an INVOKE always says
        started = datetime.fromtimestamp(started_ms / 1000, UTC).isoformat()
        redrive = None
        if headers.get(HEADER_REDRIVE_STATE):
            redrive = Redrive(
                headers[HEADER_REDRIVE_STATE],
                json.loads(headers.get(HEADER_REDRIVE_INPUT) or "null"),
                int(headers.get(HEADER_REDRIVE_COUNT) or 1),
                json.loads(headers.get(HEADER_REDRIVE_VARIABLES) or "{}"),
                {
                    int(slot): output
                    for slot, output in json.loads(headers.get(HEADER_REDRIVE_KEPT) or "{}").items()
                },
            )
        actions = engine.start(message.execution_id, payload_of(message), started, redrive=redrive)
        history.amend_start(app=message.app, started_ms=started_ms, **started_by(headers))
        return actions

    def _lost_fan_out(self, engine: Engine, message: EventMessage) -> list[Action] | None:
        """For an event replayed after a host was lost (attempt > 0) whose Parallel/Map
        state (or native fan-out) was in that host's Redis: what replaces handling it (the
        execution runs again from its input, once per host; decision 0015). None otherwise:
        handle the event as usual."""
        if not message.attempt or not message.token:
            return None
        if message.kind not in (EventKind.TASK, EventKind.TIMER):
            return None
        restart = engine.replayed(message.token)
        if restart is not None:
            print(
                f"{line_prefix(message.execution_id, self._grain.name)}a replayed event "
                "found its fan-out state lost with its host; "
                + ("the execution runs again from its input" if restart else "already rerun"),
                file=sys.stderr,
                flush=True,
            )
        return restart

    def _engine(self, message: EventMessage) -> Engine:
        engine = self._engines.get(message.workflow)
        if engine is None:
            raise ValueError(f"app '{self._config.app}' has no workflow '{message.workflow}'")
        return engine


def _float(raw: str | None) -> float | None:
    try:
        return float(raw) if raw else None
    except ValueError:
        return None
