"""Where the outcome of one event goes: the events its actions produce, its FINISHED copy
and its history, onto the local bus in one pipeline.

:class:`Router` turns the engine's actions (``TaskCall``, ``TimerCall``,
``AwaitCallback``, ``Finished``/``Failed``) into bus writes collected in an
:class:`Outbox`; :class:`~sand_worker.instance.EventHandler` sends it. Runs in the grain
worker, per event: plain code, no fork.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sand import keys
from sand.contracts import (
    DATA_HEADER,
    HEADER_CALLBACK,
    HEADER_PRODUCED,
    HEADER_REDRIVE_COUNT,
    HEADER_STARTED_MS,
    RESULT_TTL_S,
    ExecutionStatus,
    result_document,
)
from sand.localbus import BusError, LocalBus
from sand_workflows import history
from sand_workflows.engine import Action, AwaitCallback, Failed, Finished, TaskCall, TimerCall
from sand_workflows.tokens import decode_token

from sand_worker.bus import (
    FINAL_FLAG,
    EventFlag,
    EventKind,
    EventMessage,
    dumps,
    encode,
    new_event,
    now_ms,
    trigger_of,
)
from sand_worker.config import WorkerConfig
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


class Router:
    """Writes what the events of grain ``grain`` produce; one per event handler. Blocking
    only in :meth:`_stopped` (one Redis read, at an execution's end)."""

    def __init__(self, grain: str, config: WorkerConfig, client: LocalBus) -> None:
        self._grain = grain
        self._config = config
        self._client = client

    def dispatch(
        self, source: EventMessage, trace: Trace | None, actions: list[Action], out: Outbox
    ) -> None:
        """The events ``actions`` produce (tasks, timers, the execution's end) into ``out``."""
        for action in actions:
            if isinstance(action, TaskCall):
                event = new_event(
                    source,
                    kind=EventKind.TASK,
                    source_grain=self._grain,
                    target_grain=action.grain,
                    payload=dumps(action.input),
                    token=action.token,
                    host=self._config.host_id,
                    headers={
                        CONTEXT_HEADER: json.dumps(action.context),
                        TIMEOUT_HEADER: "" if action.timeout_s is None else str(action.timeout_s),
                        **(trace.headers() if trace is not None else {}),
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
                self._timer(source, action.token, now_ms() + int(action.delay_s * 1000), out)
            elif isinstance(action, AwaitCallback):
                # Parked as a timer due now: the agent that takes it registers the wait and
                # puts it back until its deadline; it fires only with an outcome.
                wait = {
                    "token": action.task_token,
                    "timeout_at": action.timeout_at_ms,
                    "heartbeat_ms": action.heartbeat_ms,
                }
                self._timer(
                    source, action.token, now_ms(), out, {HEADER_CALLBACK: json.dumps(wait)}
                )
            else:
                self._finish(source, trace, action, out)

    def _timer(
        self,
        source: EventMessage,
        token: str,
        due_ms: int,
        out: Outbox,
        headers: dict[str, str] | None = None,
    ) -> None:
        timer = new_event(
            source,
            kind=EventKind.TIMER,
            source_grain=self._grain,
            target_grain=self._grain,
            token=token,
            host=self._config.host_id,
            deadline_ms=due_ms,
        )
        if headers:
            timer.headers = {**(timer.headers or {}), **headers}
        out.later("zadd", keys.timers_key(), {encode(timer): due_ms})
        if self._config.backup:
            # a timer is work in progress too: if this host dies before it fires, the global
            # bus puts it back on another host's timers
            timer.flag = EventFlag.PROCESSING
            out.agent.append(encode(timer))

    def _finish(
        self, source: EventMessage, trace: Trace | None, action: Finished | Failed, out: Outbox
    ) -> None:
        if self._stopped(source.execution_id):
            history.retract_end()
            return  # the stop wrote the execution's end (ABORTED)
        document_trace = trace.document() if trace is not None else None
        started_ms, redrive_count = run_of(source)
        common = {
            "execution_id": source.execution_id,
            "app": source.app,
            "workflow": source.workflow,
            "started_ms": started_ms,
            "finished_ms": now_ms(),
            # which run ended: the document says so as the record does (absent: never redriven)
            "redrive_count": redrive_count or None,
            "trace": document_trace,
            "trigger": trigger_of(source.headers or {}),
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
            source_grain=self._grain,
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

    def finished(self, message: EventMessage, out: Outbox, wrote: str | None) -> None:
        """The FINISHED copy of the event this instance consumed, pushed after everything it
        produced: the agent sends it to the global bus only once those are safe there. It
        carries the metadata of what the grain wrote to the global data layer (header
        ``sand-data``), which recovery compares with Cassandra."""
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
                **({DATA_HEADER: wrote} if wrote else {}),
            },
        )
        out.agent.append(encode(finished))

    def history(
        self, recorder: history.Recorder | None, message: EventMessage, out: Outbox
    ) -> None:
        """A step's history events (``recorder``'s), as one HISTORY record after everything
        else for the agent: not counted in the FINISHED copy's ``sand-produced`` (history
        never holds back a flag), sent to Kafka and Cassandra by the agent off the path."""
        if recorder is None or not recorder.events:
            return
        record = new_event(
            message,
            kind=EventKind.HISTORY,
            source_grain=self._grain,
            target_grain="",
            payload=history.encode(recorder.events),
            host=self._config.host_id,
            headers=None,
            token="",
        )
        out.agent.append(encode(record))

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


def run_of(event: EventMessage) -> tuple[int | None, int]:
    """When the execution of ``event`` started (epoch ms; its record is listed under it,
    decision 0018) and which run of it this is (0 the first, N its Nth redrive), for its
    result document: from an INVOKE's headers, else from its token (decoded once)."""
    headers = event.headers or {}
    if event.kind == EventKind.INVOKE:
        started = int(headers.get(HEADER_STARTED_MS) or event.created_ms)
        return started, int(headers.get(HEADER_REDRIVE_COUNT) or 0)
    if not event.token:
        return None, 0
    try:
        execution = decode_token(event.token).lineage.execution
        started_ms = round(datetime.fromisoformat(execution.start_time).timestamp() * 1000)
    except ValueError:
        return None, 0
    return started_ms, execution.redrive_count
