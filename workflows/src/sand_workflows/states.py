"""Entering the states that run in one call: Task, Pass, Choice, Wait, and a Fail's error.

The single-state half of ``Engine``, beside ``GroupRunner`` (Parallel, Map) and
``NativeRunner`` (the native format): each ``enter_*`` does a state's input processing
and returns where the execution goes next (``Goto``) or the outside work it waits for
(``Done`` with a ``TaskCall`` or ``TimerCall``). It continues through the engine it
serves (``Engine.after``), so that an engine's subclass sees every transition.

Thread-safety: holds no mutable state of its own (see ``Engine``). Raises
``StatesError`` for an error of the state's own processing; the engine's drive loop
sends it through the state's Retry/Catch.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from . import errors, history
from .actions import TaskCall, TimerCall
from .choice import parse_timestamp
from .dataflow import (
    ContextObject,
    arguments,
    assign_variables,
    effective_input,
    fail_field,
    find,
    finish_result,
    input_path,
    jsonata_states,
    jsonata_string,
    jsonata_whole_number,
    output,
    output_of,
    output_path,
    parameters,
    whole_number,
)
from .errors import StatesError
from .model import ChoiceState, FailState, PassState, TaskState, WaitState
from .steps import Done, Entry, Goto, Step
from .tokens import Callback, Token, TokenKind, encode_token

if TYPE_CHECKING:
    from .engine import Engine


class StateRunner:
    """Enters the states without fan-out for the engine it serves."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def enter_pass(self, st: PassState, entry: Entry) -> Step:
        raw, lin, ctx = entry.raw_input, entry.lineage, entry.context
        if st.jsonata:
            states = jsonata_states(raw, ctx)
            after = assign_variables(st, st.assign, lin, ctx, states=states)
            return self.engine.after(st, output(st, states, lin, default=raw), after)
        result = st.result if st.has_result else effective_input(st, raw, ctx)
        out, after = finish_result(st, raw, result, ctx, lin)
        return self.engine.after(st, out, after)

    def enter_choice(self, st: ChoiceState, entry: Entry) -> Step:
        raw, lin, ctx = entry.raw_input, entry.lineage, entry.context
        states = jsonata_states(raw, ctx)
        eff = raw if st.jsonata else input_path(st, raw, ctx)
        chosen = next((c for c in st.choices if _matches(st, c, eff, ctx, states)), None)
        target, assign, out_template = (
            (chosen.next, chosen.assign, chosen.output)
            if chosen is not None
            else (st.default, st.assign, st.output)
        )
        if target is None:
            raise StatesError(
                errors.NO_CHOICE_MATCHED,
                f"no Choice Rule of state '{st.name}' matched and it has no Default",
            )
        if st.jsonata:
            after = assign_variables(st, assign, lin, ctx, states=states)
            out = output_of(st, out_template, states, lin, default=raw)
        else:
            after = assign_variables(st, assign, lin, ctx, data=eff)
            out = output_path(st, eff, ctx)
        self.engine.exited(st, out, after, next=target)
        return Goto(target, out, after)

    def enter_task(self, st: TaskState, entry: Entry) -> Step:
        if st.callback:
            # $$.Task.Token exists before Parameters/Arguments are evaluated: they pass it on
            task_token = self.engine.task_tokens.mint(
                entry.lineage.execution.id, entry.lineage.group_id(st.name)
            )
            ctx = ContextObject(
                {**entry.context, "Task": {"Token": task_token}}, entry.context.variables
            )
            entry = replace(entry, context=ctx)
        ctx = entry.context
        if st.jsonata:
            eff = arguments(st, entry.raw_input, ctx, entry.lineage)
            timeout = st.timeout_s
            states = jsonata_states(entry.raw_input, ctx)
            if st.timeout_template is not None:
                timeout = float(
                    jsonata_whole_number(st.timeout_template, st, "TimeoutSeconds", states, 1)
                )
            heartbeat = st.heartbeat_s
            if st.heartbeat_template is not None:
                heartbeat = float(
                    jsonata_whole_number(st.heartbeat_template, st, "HeartbeatSeconds", states, 1)
                )
            return self._schedule(st, entry, eff, timeout, heartbeat)
        selected = input_path(st, entry.raw_input, ctx)
        eff = parameters(st, selected, ctx)
        timeout = st.timeout_s
        if st.timeout_path is not None:
            timeout = float(
                whole_number(st.timeout_path, selected, ctx, "TimeoutSecondsPath", st, 1)
            )
        heartbeat = st.heartbeat_s
        if st.heartbeat_path is not None:
            heartbeat = float(
                whole_number(st.heartbeat_path, selected, ctx, "HeartbeatSecondsPath", st, 1)
            )
        return self._schedule(st, entry, eff, timeout, heartbeat)

    def _schedule(
        self,
        st: TaskState,
        entry: Entry,
        eff: Any,
        timeout: float | None,
        heartbeat: float | None = None,
    ) -> Step:
        ctx = entry.context
        callback = None
        if st.callback:
            timeout_s = timeout if timeout is not None else 60.0
            if heartbeat is not None and heartbeat >= timeout_s:
                raise StatesError(
                    errors.RUNTIME,
                    f"state '{st.name}': HeartbeatSeconds ({heartbeat:g}) must be smaller than"
                    f" TimeoutSeconds ({timeout_s:g})",
                )
            now_ms = int(self.engine.clock().timestamp() * 1000)
            callback = Callback(
                ctx["Task"]["Token"],
                now_ms + int(timeout_s * 1000),
                int((heartbeat or 0) * 1000),
            )
        if history.active():
            history.emit(
                "TaskScheduled",
                entry.lineage,
                st.name,
                grain=st.resource,
                input=eff,
                timeout_s=timeout,
                steps=history.take_steps(),
                **({"heartbeat_s": heartbeat, "callback": True} if st.callback else {}),
            )
        token = Token(
            kind=TokenKind.TASK,
            state=st.name,
            lineage=entry.lineage,
            entered_time=entry.entered_time,
            raw_input=entry.raw_input if st.needs_raw_input else None,
            retry_counts=entry.retry_counts,
            callback=callback,
        )
        # The grain gets $$ as plain JSON (no variables ride along).
        return Done([TaskCall(st.resource, eff, encode_token(token), timeout, dict(ctx))])

    def enter_wait(self, st: WaitState, entry: Entry) -> Step:
        ctx, raw, lin = entry.context, entry.raw_input, entry.lineage
        states = jsonata_states(raw, ctx)
        eff = raw if st.jsonata else input_path(st, raw, ctx)
        if st.seconds is not None:
            delay = st.seconds
        elif st.seconds_path is not None:
            delay = float(whole_number(st.seconds_path, eff, ctx, "SecondsPath", st, 0))
        elif st.seconds_template is not None:
            delay = float(jsonata_whole_number(st.seconds_template, st, "Seconds", states, 0))
        else:
            if st.timestamp is not None:
                text: Any = st.timestamp
            elif st.timestamp_template is not None:
                text = jsonata_string(st.timestamp_template, st, "Timestamp", states)
            else:
                assert st.timestamp_path is not None
                text = find(st.timestamp_path, eff, ctx, "TimestampPath", st)
            when = parse_timestamp(text)
            if when is None:
                raise StatesError(
                    errors.RUNTIME, f"state '{st.name}': {text!r} is not an RFC 3339 timestamp"
                )
            delay = max(0.0, (when - self.engine.clock()).total_seconds())
        if st.jsonata:
            after = assign_variables(st, st.assign, lin, ctx, states=states)
            out = output(st, states, lin, default=raw)
        else:
            after = assign_variables(st, st.assign, lin, ctx, data=eff)
            out = output_path(st, eff, ctx)
        # The Wait's processing happened now: its steps go with WaitStarted (its StateExited
        # is emitted by another call, maybe in another process, when the timer fires).
        steps = history.take_steps() if history.active() else {}
        extra = {"steps": steps} if steps else {}
        history.emit("WaitStarted", entry.lineage, st.name, seconds=delay, **extra)
        token = Token(kind=TokenKind.WAIT, state=st.name, lineage=after, output=out)
        return Done([TimerCall(delay, encode_token(token))])

    def fail_error(self, st: FailState, raw: Any, ctx: ContextObject) -> tuple[str, str]:
        error = st.error
        if st.error_expr is not None:
            error = fail_field(st, st.error_expr, raw, ctx, "ErrorPath")
        elif st.error_template is not None:
            error = jsonata_string(st.error_template, st, "Error", jsonata_states(raw, ctx))
        cause = st.cause
        if st.cause_expr is not None:
            cause = fail_field(st, st.cause_expr, raw, ctx, "CausePath")
        elif st.cause_template is not None:
            cause = jsonata_string(st.cause_template, st, "Cause", jsonata_states(raw, ctx))
        return error or "", cause or ""


def _matches(
    st: ChoiceState, choice: Any, eff: Any, ctx: ContextObject, states: dict[str, Any]
) -> bool:
    if choice.rule is not None:
        return bool(choice.rule.evaluate(eff, ctx))
    assert choice.condition is not None
    value = choice.condition.evaluate(st.name, "Condition", states, ctx.variables)
    if not isinstance(value, bool):
        raise StatesError(
            errors.QUERY_EVALUATION_ERROR,
            f"state '{st.name}': a Condition must yield true or false, got {value!r}",
        )
    return value
