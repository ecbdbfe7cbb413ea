"""What one grain instance does with one event: step the workflow, run the grain, route.

Runs inside a forked child (``worker``), but is plain code: given an event it
drives ``sand_workflows.engine.Engine`` and writes every resulting event to the
local bus in one pipeline. ``fail_task`` lets the parent report a child that
died in the middle of a task.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sand import keys
from sand.app import AppSpec
from sand.contracts import (
    DATA_HEADER,
    HEADER_NAME,
    HEADER_PRODUCED,
    HEADER_REDRIVE_COUNT,
    HEADER_REDRIVE_INPUT,
    HEADER_REDRIVE_STATE,
    HEADER_REDRIVE_VARIABLES,
    HEADER_STARTED_MS,
    RESULT_TTL_S,
    ExecutionStatus,
    result_document,
)
from sand.data import DataStore, Scope
from sand.data.agent import AgentDataStore
from sand.data.redis import RedisDataStore
from sand.data.written import RecordingDataStore, header_value
from sand.grain.result import GrainResult, Invocation
from sand.grain.runner import Handler, invoke
from sand.localbus import BusError, LocalBus
from sand_workflows import history
from sand_workflows.engine import Action, Engine, Failed, Finished, Redrive, TaskCall, TimerCall
from sand_workflows.model import GrainState
from sand_workflows.tokens import decode_token

from sand_worker.bus import (
    FINAL_FLAG,
    EventFlag,
    EventKind,
    EventMessage,
    decode,
    dumps,
    encode,
    new_event,
    now_ms,
    payload_of,
)
from sand_worker.config import WorkerConfig
from sand_worker.logtag import tagged_output
from sand_worker.metrics import GrainMetrics
from sand_worker.store import RedisExecutionStore
from sand_worker.trace import Trace

log = logging.getLogger("sand.worker")

# TASK events carry the engine's TaskCall fields the Thrift struct has no slot for.
CONTEXT_HEADER = "context"
TIMEOUT_HEADER = "timeout_s"


@dataclass(slots=True)
class Outbox:
    """What one event's handling writes to the local bus, sent in one pipeline.

    The records for the host agent go first, in one LPUSH: Redis runs it atomically, so they
    reach the agent queue together and in order, nobody else's records between them. A
    FINISHED copy at the end names how many came before it (``HEADER_PRODUCED``): the agent
    holds the flag back until exactly those are on the global bus. Going first also puts an
    event's backup there before the event is on a grain queue (before any instance can take
    it and finish it)."""

    agent: list[bytes] = field(default_factory=list)
    rest: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = field(default_factory=list)

    def later(self, command: str, *args: Any, **kwargs: Any) -> None:
        """A Redis command to run after the agent's records (``pipe.<command>(*args)``)."""
        self.rest.append((command, args, kwargs))

    def send(self, client: LocalBus, agent_key: str) -> None:
        pipe = client.pipeline(transaction=False)
        if self.agent:
            pipe.lpush(agent_key, *self.agent)
        for command, args, kwargs in self.rest:
            getattr(pipe, command)(*args, **kwargs)
        pipe.execute()


@dataclass(frozen=True, slots=True)
class Grain:
    """The grain this worker serves, loaded once in the parent."""

    app: AppSpec
    name: str
    handler: Handler

    @property
    def events_per_instance(self) -> int:
        """How many events one instance serves before it exits (1: fork per event)."""
        return self.app.grains[self.name].events_per_instance


class EventHandler:
    """Handles events for one grain with one Redis connection (one per process)."""

    def __init__(self, grain: Grain, config: WorkerConfig, client: LocalBus) -> None:
        self._grain = grain
        self._config = config
        self._client = client
        store = RedisExecutionStore(client, config.app)
        self._engines = {
            name: Engine(spec.definition, store) for name, spec in grain.app.workflows.items()
        }
        self._trace: Trace | None = None
        self._metrics = GrainMetrics(config.app, grain.name)
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

    def handle(self, raw: bytes, on_task: Callable[[str, float], None]) -> GrainResult | None:
        """Process one event end to end. ``on_task(token, timeout_s)`` is called before
        the grain runs, so that a parent can explain this task if the process dies.
        Returns what the grain's run gave, or None when the event ran no grain here."""
        message = decode(raw)
        with history.recording(self._recorder()) as recorder:
            return self._handle(message, on_task, recorder)

    def _recorder(self) -> history.Recorder | None:
        """Where this step's history goes; None when the app records none (decision 0018)."""
        if not self._grain.app.history:
            return None
        return history.Recorder(host=self._config.host_id, pid=os.getpid())

    def _handle(
        self,
        message: EventMessage,
        on_task: Callable[[str, float], None],
        recorder: history.Recorder | None,
    ) -> GrainResult | None:
        self._global.take()  # a reused instance: the notes of the previous event are sent
        self._trace = Trace.from_headers(
            message.headers,
            self._grain.name,
            EventKind._VALUES_TO_NAMES.get(message.kind, "?"),
            message.created_ms,
        )
        engine = self._engine(message)
        out = Outbox()
        result: GrainResult | None = None
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
            actions, result = self._run(engine, call, message, on_task)
        else:
            if message.kind == EventKind.INVOKE:
                actions = self._start(engine, message)
            elif message.kind == EventKind.TIMER:
                actions = engine.timer_fired(message.token)
            else:
                raise ValueError(f"a grain queue cannot take an event of kind {message.kind}")
            inline = next(
                (a for a in actions if isinstance(a, TaskCall) and a.grain == self._grain.name),
                None,
            )
            if inline is not None:
                # Run our own first task here instead of queueing it: one hop less.
                rest = [a for a in actions if a is not inline]
                actions, result = self._run(engine, inline, message, on_task)
                actions = rest + actions
        self._dispatch(actions, message, out)
        self._finished(message, out)
        self._metrics.record(out.later, result)
        self._history(recorder, message, out)
        out.send(self._client, keys.agent_key(self._config.host_id))
        return result

    def _start(self, engine: Engine, message: EventMessage) -> list[Action]:
        """Begin the execution of an INVOKE event, or run it again from the state that
        failed when the event is a redrive (headers ``sand-redrive-*``)."""
        headers = message.headers or {}
        started_ms = _started_ms(message)
        assert started_ms is not None  # an INVOKE always says
        started = datetime.fromtimestamp(started_ms / 1000, UTC).isoformat()
        redrive = None
        if headers.get(HEADER_REDRIVE_STATE):
            redrive = Redrive(
                headers[HEADER_REDRIVE_STATE],
                json.loads(headers.get(HEADER_REDRIVE_INPUT) or "null"),
                int(headers.get(HEADER_REDRIVE_COUNT) or 1),
                json.loads(headers.get(HEADER_REDRIVE_VARIABLES) or "{}"),
            )
        actions = engine.start(message.execution_id, payload_of(message), started, redrive=redrive)
        history.amend_start(
            app=message.app, name=headers.get(HEADER_NAME) or None, started_ms=started_ms
        )
        return actions

    def _history(
        self, recorder: history.Recorder | None, message: EventMessage, out: Outbox
    ) -> None:
        """This step's history events, as one HISTORY record after everything else for the
        agent: not counted in the FINISHED copy's ``sand-produced`` (history never holds
        back a flag), sent to Kafka and Cassandra by the agent off the path."""
        if recorder is None or not recorder.events:
            return
        record = new_event(
            message,
            kind=EventKind.HISTORY,
            source_grain=self._grain.name,
            target_grain="",
            payload=history.encode(recorder.events),
            host=self._config.host_id,
            headers=None,
            token="",
        )
        out.agent.append(encode(record))

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
                f"execution={message.execution_id} grain={self._grain.name}: a replayed event "
                "found its fan-out state lost with its host; "
                + ("the execution runs again from its input" if restart else "already rerun"),
                file=sys.stderr,
                flush=True,
            )
        return restart

    def _finished(self, message: EventMessage, out: Outbox) -> None:
        """The FINISHED copy of the event this instance consumed, pushed after everything it
        produced: the agent sends it to the global bus only once those are safe there. It
        carries the metadata of what the grain wrote to the global data layer (header
        ``sand-data``), which recovery compares with Cassandra."""
        written = self._global.take()
        if not self._config.backup:
            return
        finished = EventMessage(
            event_id=message.event_id,
            execution_id=message.execution_id,
            app=message.app,
            kind=message.kind,
            flag=EventFlag.FINISHED,
            created_ms=now_ms(),
            host=self._config.host_id,
            target_grain=message.target_grain,
            headers={
                HEADER_PRODUCED: str(len(out.agent)),
                **({DATA_HEADER: header_value(written)} if written else {}),
            },
        )
        out.agent.append(encode(finished))

    def fail_task(self, raw: bytes, token: str | None, result: GrainResult) -> None:
        """Report a task whose process died (timeout kill, signal, exit) to the engine."""
        message = decode(raw)
        engine = self._engine(message)
        with history.recording(self._recorder()) as recorder:
            error = result.error or "States.Runtime"
            if token is None:
                actions: list[Action] = [Failed(error, result.cause or "")]
                history.emit_execution(
                    "ExecutionFailed", message.execution_id, error=error, cause=result.cause or ""
                )
            else:
                actions = engine.task_failed(
                    token, result.error or "States.TaskFailed", result.cause or ""
                )
            out = Outbox()
            self._dispatch(actions, message, out)
        # the event was handled: its failure went through the workflow (Retry, Catch, or the end)
        self._finished(message, out)
        self._history(recorder, message, out)
        out.send(self._client, keys.agent_key(self._config.host_id))

    def drop(self, raw: bytes) -> None:
        """End an event of a stopped execution (decision 0018) without handling it: only its
        FINISHED copy goes out, so no host replays it and nothing follows from it."""
        message = decode(raw)
        self._global.take()
        out = Outbox()
        self._finished(message, out)
        out.send(self._client, keys.agent_key(self._config.host_id))

    def _stopped(self, execution_id: str) -> bool:
        """Whether the execution was stopped on request (exact: asked of Redis). Made once
        per execution, before its result is written; a stop that lands after this check
        and before the write loses the race and the execution ends as it ran."""
        try:
            key = keys.aborted_key(self._config.app)
            return self._client.zscore(key, execution_id) is not None
        except BusError as exc:
            log.warning("cannot check whether %s was stopped: %s", execution_id, exc)
            return False

    def _engine(self, message: EventMessage) -> Engine:
        engine = self._engines.get(message.workflow)
        if engine is None:
            raise ValueError(f"app '{self._config.app}' has no workflow '{message.workflow}'")
        return engine

    def _run(
        self,
        engine: Engine,
        call: TaskCall,
        message: EventMessage,
        on_task: Callable[[str, float], None],
    ) -> tuple[list[Action], GrainResult]:
        limits = self._grain.app.limits
        timeout_s = min(call.timeout_s or limits.timeout_s, limits.timeout_s)
        on_task(call.token, timeout_s)
        state = engine.wf.states.get(self._grain.name)
        invocation = Invocation(
            app_name=self._config.app,
            grain_name=self._grain.name,
            execution_id=message.execution_id,
            input=call.input,
            timeout_s=timeout_s,
            payload_limit_bytes=limits.payload_bytes,
            potential_next=frozenset(state.potential_next if isinstance(state, GrainState) else ()),
            state=call.context,
        )
        if self._trace is not None:
            self._trace.started()
        history.emit_for_token(
            "TaskStarted", call.token, grain=self._grain.name, attempt=message.attempt
        )
        with tagged_output(message.execution_id, self._grain.name):
            result = invoke(self._grain.handler, invocation, self._stores)
        if self._trace is not None:
            self._trace.ended()
        if result.ok:
            return engine.task_succeeded(call.token, result.output, result.next_grains), result
        if result.traceback:
            print(
                f"execution={message.execution_id} grain={self._grain.name} "
                f"error={result.error}\n{result.traceback}",
                file=sys.stderr,
                flush=True,
            )
        actions = engine.task_failed(
            call.token, result.error or "States.TaskFailed", result.cause or ""
        )
        return actions, result

    def _dispatch(self, actions: list[Action], source: EventMessage, out: Outbox) -> None:
        for action in actions:
            if isinstance(action, TaskCall):
                event = new_event(
                    source,
                    kind=EventKind.TASK,
                    source_grain=self._grain.name,
                    target_grain=action.grain,
                    payload=dumps(action.input),
                    token=action.token,
                    host=self._config.host_id,
                    headers={
                        CONTEXT_HEADER: json.dumps(action.context),
                        TIMEOUT_HEADER: "" if action.timeout_s is None else str(action.timeout_s),
                        **(self._trace.headers() if self._trace is not None else {}),
                    },
                )
                encoded = encode(event)
                if action.grain in self._config.remote_grains:
                    # A cross-host hop: the agent publishes the event (flag QUEUED) to the
                    # grain's topic; the host that owns the partition takes it from there
                    # and writes the PROCESSING copy.
                    out.agent.append(encoded)
                    continue
                if self._config.backup:
                    event.flag = EventFlag.PROCESSING
                    out.agent.append(encode(event))
                queue = keys.queue_key(self._config.app, action.grain)
                out.later("lpush", queue, encoded)
            elif isinstance(action, TimerCall):
                due_ms = now_ms() + int(action.delay_s * 1000)
                timer = new_event(
                    source,
                    kind=EventKind.TIMER,
                    source_grain=self._grain.name,
                    target_grain=self._grain.name,
                    token=action.token,
                    host=self._config.host_id,
                    deadline_ms=due_ms,
                )
                out.later("zadd", keys.timers_key(), {encode(timer): due_ms})
                if self._config.backup:
                    # a timer is work in progress too: if this host dies before it fires,
                    # the global bus puts it back on another host's timers
                    timer.flag = EventFlag.PROCESSING
                    out.agent.append(encode(timer))
            else:
                self._finish(action, source, out)

    def _finish(self, action: Finished | Failed, source: EventMessage, out: Outbox) -> None:
        if self._stopped(source.execution_id):
            history.retract_end()
            return  # the stop wrote the execution's end (ABORTED)
        trace = self._trace.document() if self._trace is not None else None
        common = {
            "execution_id": source.execution_id,
            "app": source.app,
            "workflow": source.workflow,
            "started_ms": _started_ms(source),
            "finished_ms": now_ms(),
            "trace": trace,
        }
        if isinstance(action, Finished):
            document = result_document(ExecutionStatus.SUCCEEDED, output=action.output, **common)
            kind = EventKind.RESULT
        else:
            document = result_document(
                ExecutionStatus.FAILED, error=action.error, cause=action.cause, **common
            )
            kind = EventKind.ERROR
        body = dumps(document)
        result = new_event(
            source,
            kind=kind,
            source_grain=self._grain.name,
            target_grain="",
            payload=body,
            host=self._config.host_id,
            flag=FINAL_FLAG[kind],
            error=document.get("error", ""),
            cause=document.get("cause", ""),
        )
        encoded = encode(result)
        out.later("set", keys.result_key(source.execution_id), body, ex=RESULT_TTL_S)
        if source.reply_to:
            out.later("lpush", keys.reply_key(source.reply_to), encoded)
        out.agent.append(encoded)


def _started_ms(event: EventMessage) -> int | None:
    """When the execution of ``event`` started (epoch ms), for its result document: the
    execution's record is listed under it (decision 0018), history or not."""
    headers = event.headers or {}
    if event.kind == EventKind.INVOKE:
        return int(headers.get(HEADER_STARTED_MS) or event.created_ms)
    if not event.token:
        return None
    try:
        started = decode_token(event.token).lineage.execution.start_time
        return round(datetime.fromisoformat(started).timestamp() * 1000)
    except ValueError:
        return None


def _float(raw: str | None) -> float | None:
    try:
        return float(raw) if raw else None
    except ValueError:
        return None
