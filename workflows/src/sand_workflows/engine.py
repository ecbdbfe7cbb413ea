"""The step interpreter (decision 0002): pure, never runs user code, never sleeps.

Each entry point takes a token (or an execution's input), advances the execution through
every state that needs no outside work (Pass, Choice, Succeed, Fail, entering Parallel or
Map, input/output processing) and returns the actions the driver must perform:
``TaskCall`` (run a grain), ``TimerCall`` (call ``timer_fired`` later), ``Finished`` or
``Failed``. Everything a later step needs travels in the token; fan-out bookkeeping lives
in the ``ExecutionStore``.

Thread-safety: an Engine holds no mutable state of its own; several threads (or hosts)
may call it concurrently for the same execution as long as they share the store.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from . import errors
from .choice import parse_timestamp
from .errors import StatesError
from .intrinsics import evaluate, parse_intrinsic
from .model import Retrier, State, Workflow
from .paths import Path, PathNotFound, PathWriteError, compile_path, compile_reference_path, set_at
from .store import Claim, ExecutionStore, InMemoryStore, RecordOutcome

__all__ = [
    "Action",
    "Claim",
    "Engine",
    "ExecutionStore",
    "Failed",
    "Finished",
    "InMemoryStore",
    "RecordOutcome",
    "TaskCall",
    "TimerCall",
]

TOKEN_VERSION = 1


@dataclass(frozen=True, slots=True)
class TaskCall:
    """Run grain ``grain`` on ``input``; report with ``task_succeeded``/``task_failed(token)``.

    ``timeout_s`` is the deadline the runner enforces (reporting ``States.Timeout``), or
    None for the runner's default. ``context`` is the context object (``$$``).
    """

    grain: str
    input: Any
    token: str
    timeout_s: float | None
    context: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TimerCall:
    """Call ``timer_fired(token)`` after ``delay_s`` seconds (a Wait state or a Retry)."""

    delay_s: float
    token: str


@dataclass(frozen=True, slots=True)
class Finished:
    """The execution succeeded with ``output``."""

    output: Any


@dataclass(frozen=True, slots=True)
class Failed:
    """The execution failed."""

    error: str
    cause: str


Action = TaskCall | TimerCall | Finished | Failed


@dataclass(slots=True)
class _Lineage:
    """Where an execution thread is: execution id, base context, branch frames, entry counter."""

    x: str
    cx: dict[str, Any]
    fr: list[dict[str, Any]]
    n: int = 0

    def child(self, frame: dict[str, Any]) -> _Lineage:
        return _Lineage(self.x, self.cx, [*self.fr, frame], 0)

    def group_ids(self) -> list[str]:
        return [f["g"] for f in self.fr]

    def scope_id(self) -> str:
        if not self.fr:
            return self.x
        f = self.fr[-1]
        return f"{f['g']}/{f['i']}"


@dataclass(slots=True)
class _Goto:
    state: str
    raw: Any
    lin: _Lineage
    rc: list[int] | None = None


@dataclass(slots=True)
class _Done:
    actions: list[Action] = field(default_factory=list)


_Step = _Goto | _Done


def _now_iso(clock: Callable[[], datetime]) -> str:
    return clock().astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _matches(names: Sequence[str], error: str) -> bool:
    # Spec Appendix A: States.ALL "matches any Error Name"; every other name matches itself.
    return errors.ALL in names or error in names


class Engine:
    """Interpreter of one workflow. See module docstring and README "Engine API".

    ``clock`` returns the current aware datetime (State.EnteredTime, Wait Timestamp);
    ``rng`` draws retry jitter. ``max_inline_steps`` bounds the states entered in one call
    without outside work, so a loop of Pass/Choice states fails with States.Runtime
    instead of spinning.
    """

    def __init__(
        self,
        workflow: Workflow,
        store: ExecutionStore,
        *,
        clock: Callable[[], datetime] | None = None,
        rng: random.Random | None = None,
        max_inline_steps: int = 10_000,
    ) -> None:
        self.wf = workflow
        self.store = store
        self.clock = clock or (lambda: datetime.now(UTC))
        self.rng = rng or random.Random()
        self.max_inline_steps = max_inline_steps

    # -- public API ------------------------------------------------------------------------
    def start(
        self, execution_id: str, input: Any, start_time_iso: str | None = None
    ) -> list[Action]:
        """Begin an execution; ``start_time_iso`` becomes ``$$.Execution.StartTime``."""
        start_time = start_time_iso or _now_iso(self.clock)
        cx = {
            "Execution": {
                "Id": execution_id,
                "Input": input,
                "Name": execution_id,
                "StartTime": start_time,
            },
            "StateMachine": {"Id": self.wf.source, "Name": self.wf.name},
        }
        lin = _Lineage(execution_id, cx, [])
        if self.wf.kind == "native":
            if self.wf.concurrent:
                self.store.open_group(self._end_guard(execution_id), 1, "{}")
            return [self._native_call(self.wf.start_at, input, lin)]
        return self._drive(_Goto(self.wf.start_at, input, lin))

    def task_succeeded(
        self, token: str, output: Any, next_grains: Sequence[str] | None = None
    ) -> list[Action]:
        """The TaskCall of ``token`` returned ``output``.

        ``next_grains`` is the native dynamic next (grains picked among ``potentialNext``).
        Returns ``[]`` when the token belongs to a branch of a failed Parallel/Map or a
        finished native execution.
        """
        tok = _decode(token)
        lin = _lineage(tok)
        if self.wf.kind == "native":
            return self._native_succeeded(tok, lin, output, next_grains)
        if not self._alive(lin):
            return []
        st = self.wf.states[tok["s"]]
        raw = tok.get("raw")
        rc = tok.get("rc")
        ctx = self._context(lin, st, tok.get("et", ""), rc)
        try:
            out = self._apply_result(st, raw, output, ctx)
        except StatesError as exc:
            return self._drive(self._state_error(st, raw, lin, rc, exc.error, exc.cause))
        return self._drive(self._after(st, out, lin))

    def task_failed(self, token: str, error: str, cause: str) -> list[Action]:
        """The TaskCall of ``token`` failed with ``error`` (an error name) and ``cause``."""
        tok = _decode(token)
        lin = _lineage(tok)
        if self.wf.kind == "native":
            return self._native_fail(lin, error, cause)
        if not self._alive(lin):
            return []
        st = self.wf.states[tok["s"]]
        return self._drive(self._state_error(st, tok.get("raw"), lin, tok.get("rc"), error, cause))

    def timer_fired(self, token: str) -> list[Action]:
        """The TimerCall of ``token`` is due (a Wait ended, or a Retry delay passed)."""
        tok = _decode(token)
        lin = _lineage(tok)
        if not self._alive(lin):
            return []
        st = self.wf.states[tok["s"]]
        if tok["k"] == "retry":
            return self._drive(_Goto(st.name, tok.get("raw"), lin, list(tok.get("rc") or [])))
        if tok["k"] == "wait":
            return self._drive(self._after(st, tok.get("out"), lin))
        raise ValueError(f"token of kind {tok['k']!r} is not a timer token")

    # -- driving -------------------------------------------------------------------------
    def _drive(self, step: _Step) -> list[Action]:
        inline = 0
        while isinstance(step, _Goto):
            inline += 1
            if inline > self.max_inline_steps:
                step = self._raise(
                    step.lin,
                    errors.RUNTIME,
                    f"more than {self.max_inline_steps} states entered without running a task;"
                    f" last state '{step.state}'",
                )
                continue
            goto = step
            st = self.wf.states[goto.state]
            goto.lin.n += 1
            try:
                step = self._enter(st, goto.raw, goto.lin, goto.rc)
            except StatesError as exc:
                # Errors of the state's own processing go through its Retry/Catch.
                step = self._state_error(st, goto.raw, goto.lin, goto.rc, exc.error, exc.cause)
        return step.actions

    def _enter(self, st: State, raw: Any, lin: _Lineage, rc: list[int] | None) -> _Step:
        entered = _now_iso(self.clock)
        ctx = self._context(lin, st, entered, rc)
        if st.type == "Task":
            return self._enter_task(st, raw, lin, rc, ctx, entered)
        if st.type == "Pass":
            eff = self._effective_input(st, raw, ctx)
            result = st.result if st.has_result else eff
            return self._after(st, self._apply_result(st, raw, result, ctx), lin)
        if st.type == "Choice":
            eff = self._input_path(st, raw, ctx)
            target = next((t for rule, t in st.choices if rule.evaluate(eff, ctx)), st.default)
            if target is None:
                raise StatesError(
                    errors.NO_CHOICE_MATCHED,
                    f"no Choice Rule of state '{st.name}' matched and it has no Default",
                )
            return _Goto(target, self._output_path(st, eff, ctx), lin)
        if st.type == "Wait":
            return self._enter_wait(st, raw, lin, ctx)
        if st.type == "Succeed":
            return self._finish(lin, self._output_path(st, self._input_path(st, raw, ctx), ctx))
        if st.type == "Fail":
            error = (
                st.error
                if st.error_expr is None
                else self._fail_field(st, st.error_expr, raw, ctx, "ErrorPath")
            )
            cause = (
                st.cause
                if st.cause_expr is None
                else self._fail_field(st, st.cause_expr, raw, ctx, "CausePath")
            )
            return self._raise(lin, error or "", cause or "")
        if st.type == "Parallel":
            return self._enter_parallel(st, raw, lin, rc, ctx, entered)
        if st.type == "Map":
            return self._enter_map(st, raw, lin, rc, ctx, entered)
        raise StatesError(errors.RUNTIME, f"state '{st.name}' has unsupported type {st.type}")

    def _after(self, st: State, output: Any, lin: _Lineage) -> _Step:
        if st.end or st.next is None:
            return self._finish(lin, output)
        return _Goto(st.next, output, lin)

    # -- states ------------------------------------------------------------------------------
    def _enter_task(
        self,
        st: State,
        raw: Any,
        lin: _Lineage,
        rc: list[int] | None,
        ctx: dict[str, Any],
        entered: str,
    ) -> _Step:
        selected = self._input_path(st, raw, ctx)
        eff = self._parameters(st, selected, ctx)
        timeout = st.timeout_s
        if st.timeout_path is not None:
            timeout = float(
                self._positive_int(st.timeout_path, selected, ctx, "TimeoutSecondsPath", st, 1)
            )
        tok: dict[str, Any] = {"k": "task", "s": st.name, "et": entered}
        if st.needs_raw_input:
            tok["raw"] = raw
        if rc:
            tok["rc"] = rc
        assert st.resource is not None
        return _Done([TaskCall(st.resource, eff, _encode(tok, lin), timeout, ctx)])

    def _enter_wait(self, st: State, raw: Any, lin: _Lineage, ctx: dict[str, Any]) -> _Step:
        eff = self._input_path(st, raw, ctx)
        if st.seconds is not None:
            delay = st.seconds
        elif st.seconds_path is not None:
            delay = float(self._positive_int(st.seconds_path, eff, ctx, "SecondsPath", st, 0))
        else:
            if st.timestamp is not None:
                text: Any = st.timestamp
            else:
                assert st.timestamp_path is not None
                text = self._find(st.timestamp_path, eff, ctx, errors.RUNTIME, "TimestampPath", st)
            when = parse_timestamp(text)
            if when is None:
                raise StatesError(
                    errors.RUNTIME, f"state '{st.name}': {text!r} is not an RFC 3339 timestamp"
                )
            delay = max(0.0, (when - self.clock()).total_seconds())
        out = self._output_path(st, eff, ctx)
        tok = {"k": "wait", "s": st.name, "out": out}
        return _Done([TimerCall(delay, _encode(tok, lin))])

    def _enter_parallel(
        self,
        st: State,
        raw: Any,
        lin: _Lineage,
        rc: list[int] | None,
        ctx: dict[str, Any],
        entered: str,
    ) -> _Step:
        eff = self._parameters(st, self._input_path(st, raw, ctx), ctx)
        gid = f"{lin.scope_id()}/{st.name}#{lin.n}"
        parent = {
            "s": st.name,
            "n": lin.n,
            "raw": raw,
            "rc": rc,
            "fr": lin.fr,
            "cx": lin.cx,
            "et": entered,
        }
        self.store.open_group(gid, len(st.branches), _dumps(parent))
        actions: list[Action] = []
        for i, start in enumerate(st.branches):
            if i and not self.store.is_open([gid]):
                break  # an earlier branch already failed the group
            actions += self._drive(_Goto(start, eff, lin.child({"g": gid, "i": i})))
        return _Done(actions)

    def _enter_map(
        self,
        st: State,
        raw: Any,
        lin: _Lineage,
        rc: list[int] | None,
        ctx: dict[str, Any],
        entered: str,
    ) -> _Step:
        eff = self._input_path(st, raw, ctx)
        items = self._find(st.items_path, eff, ctx, errors.RUNTIME, "ItemsPath", st)
        if not isinstance(items, list):
            raise StatesError(
                errors.RUNTIME,
                f"state '{st.name}': ItemsPath '{st.items_path.text}' must select an array,"
                f" got {_kind(items)}",
            )
        limit = st.max_concurrency
        if st.max_concurrency_path is not None:
            limit = self._positive_int(
                st.max_concurrency_path, eff, ctx, "MaxConcurrencyPath", st, 0
            )
        selected = []
        for index, value in enumerate(items):
            if st.item_selector is None:
                selected.append(value)
            else:
                item_ctx = {**ctx, "Map": {"Item": {"Index": index, "Value": value}}}
                selected.append(self._payload(st.item_selector, eff, item_ctx))
        if not selected:
            return self._after(st, self._apply_result(st, raw, [], ctx), lin)
        gid = f"{lin.scope_id()}/{st.name}#{lin.n}"
        parent = {
            "s": st.name,
            "n": lin.n,
            "raw": raw,
            "rc": rc,
            "fr": lin.fr,
            "cx": lin.cx,
            "et": entered,
            "items": selected,
        }
        self.store.open_group(gid, len(selected), _dumps(parent))
        claim = self.store.claim_items(gid, limit or len(selected))
        actions: list[Action] = []
        for i in claim.indices if claim else ():
            if not self.store.is_open([gid]):
                break
            actions += self._start_item(st, gid, i, selected[i], lin, limit)
        return _Done(actions)

    def _start_item(
        self, st: State, gid: str, index: int, item: Any, lin: _Lineage, limit: int
    ) -> list[Action]:
        assert st.processor is not None
        frame = {"g": gid, "i": index}
        if limit:
            frame["m"] = 1  # Map with MaxConcurrency: a finished item claims the next one
        return self._drive(_Goto(st.processor, item, lin.child(frame)))

    # -- branch ends and errors -------------------------------------------------------------
    def _finish(self, lin: _Lineage, output: Any) -> _Step:
        if not lin.fr:
            return _Done([Finished(output)])
        frame = lin.fr[-1]
        outcome = self.store.record_result(frame["g"], frame["i"], _dumps(output))
        if outcome.completed:
            assert outcome.parent is not None
            return self._complete_group(outcome.parent, outcome.results)
        if outcome.accepted and frame.get("m"):
            claim = self.store.claim_items(frame["g"], 1)
            if claim and claim.indices:
                parent = json.loads(claim.parent)
                st = self.wf.states[parent["s"]]
                outer = _Lineage(lin.x, lin.cx, lin.fr[:-1], parent["n"])
                actions: list[Action] = []
                for i in claim.indices:
                    actions += self._start_item(st, frame["g"], i, parent["items"][i], outer, 1)
                return _Done(actions)
        return _Done([])

    def _complete_group(self, parent_json: str, results: Sequence[str]) -> _Step:
        parent = json.loads(parent_json)
        st = self.wf.states[parent["s"]]
        lin = _Lineage(parent["cx"]["Execution"]["Id"], parent["cx"], parent["fr"], parent["n"])
        ctx = self._context(lin, st, parent.get("et", ""), parent.get("rc"))
        try:
            out = self._apply_result(st, parent["raw"], [json.loads(r) for r in results], ctx)
        except StatesError as exc:
            return self._state_error(st, parent["raw"], lin, parent.get("rc"), exc.error, exc.cause)
        return self._after(st, out, lin)

    def _raise(self, lin: _Lineage, error: str, cause: str) -> _Step:
        """An unhandled error leaves the current scope: fail the execution or the branch group."""
        if not lin.fr:
            return _Done([Failed(error, cause)])
        parent_json = self.store.close_group(lin.fr[-1]["g"])
        if parent_json is None:
            return _Done([])  # the group already failed or finished: this error is late
        parent = json.loads(parent_json)
        st = self.wf.states[parent["s"]]
        outer = _Lineage(lin.x, lin.cx, lin.fr[:-1], parent["n"])
        # Spec "Parallel State"/"Map State": the state fails with the branch's error.
        return self._state_error(st, parent["raw"], outer, parent.get("rc"), error, cause)

    def _state_error(
        self, st: State, raw: Any, lin: _Lineage, rc: list[int] | None, error: str, cause: str
    ) -> _Step:
        """Retry, then Catch, then propagate (spec "Retrying after error", "Fallback states")."""
        counts = list(rc or [0] * len(st.retry))
        counts += [0] * (len(st.retry) - len(counts))
        for i, retrier in enumerate(st.retry):
            if not _matches(retrier.error_equals, error):
                continue
            if counts[i] < retrier.max_attempts:
                delay = self._retry_delay(retrier, counts[i])
                counts[i] += 1
                tok = {"k": "retry", "s": st.name, "raw": raw, "rc": counts}
                return _Done([TimerCall(delay, _encode(tok, lin))])
            break  # the first matching Retrier is exhausted: fall through to Catch
        for catcher in st.catch:
            if _matches(catcher.error_equals, error):
                error_output = {"Error": error, "Cause": cause}
                if catcher.result_path is None:
                    out = raw
                elif catcher.result_path.steps == ():
                    out = error_output
                else:
                    try:
                        out = set_at(raw, catcher.result_path, error_output)
                    except PathWriteError as exc:
                        return self._raise(
                            lin, errors.RESULT_PATH_MATCH_FAILURE, f"state '{st.name}' Catch: {exc}"
                        )
                return _Goto(catcher.next, out, lin)
        return self._raise(lin, error, cause)

    def _retry_delay(self, retrier: Retrier, done: int) -> float:
        delay = retrier.interval_s * retrier.backoff_rate**done
        if retrier.max_delay_s is not None:
            delay = min(delay, float(retrier.max_delay_s))
        if retrier.jitter == "FULL":
            delay = self.rng.uniform(0.0, delay)
        return delay

    def _alive(self, lin: _Lineage) -> bool:
        return not lin.fr or self.store.is_open(lin.group_ids())

    # -- input and output processing ----------------------------------------------------------
    def _context(
        self, lin: _Lineage, st: State, entered: str, rc: list[int] | None
    ) -> dict[str, Any]:
        return {
            **lin.cx,
            "State": {"Name": st.name, "EnteredTime": entered, "RetryCount": sum(rc or [])},
        }

    def _find(self, path: Path, data: Any, ctx: Any, error: str, field_name: str, st: State) -> Any:
        try:
            return path.find(data, ctx)
        except PathNotFound:
            raise StatesError(
                error, f"state '{st.name}': {field_name} '{path.text}' matches nothing in the input"
            ) from None

    def _input_path(self, st: State, raw: Any, ctx: Any) -> Any:
        if st.input_path is None:
            return {}
        if st.input_path.steps == ():
            return raw
        return self._find(st.input_path, raw, ctx, errors.RUNTIME, "InputPath", st)

    def _output_path(self, st: State, out: Any, ctx: Any) -> Any:
        if st.output_path is None:
            return {}
        if st.output_path.steps == ():
            return out
        return self._find(st.output_path, out, ctx, errors.RUNTIME, "OutputPath", st)

    def _parameters(self, st: State, selected: Any, ctx: Any) -> Any:
        if st.parameters is None:
            return selected
        return self._payload(st.parameters, selected, ctx)

    def _effective_input(self, st: State, raw: Any, ctx: Any) -> Any:
        return self._parameters(st, self._input_path(st, raw, ctx), ctx)

    def _apply_result(self, st: State, raw: Any, result: Any, ctx: Any) -> Any:
        if st.result_selector is not None:
            result = self._payload(st.result_selector, result, ctx)
        if st.result_path is None:
            out = raw
        elif st.result_path.steps == ():
            out = result
        else:
            try:
                out = set_at(raw, st.result_path, result)
            except PathWriteError as exc:
                raise StatesError(
                    errors.RESULT_PATH_MATCH_FAILURE, f"state '{st.name}': {exc}"
                ) from None
        return self._output_path(st, out, ctx)

    def _payload(self, template: Any, data: Any, ctx: Any) -> Any:
        """Process a Payload Template (spec "Payload Template"), however deeply nested."""
        if isinstance(template, dict):
            out: dict[str, Any] = {}
            for key, value in template.items():
                if key.endswith(".$") and isinstance(value, str):
                    out[key[:-2]] = self._dynamic(value, data, ctx)
                else:
                    out[key] = self._payload(value, data, ctx)
            return out
        if isinstance(template, list):
            return [self._payload(v, data, ctx) for v in template]
        return template

    def _dynamic(self, expr: str, data: Any, ctx: Any) -> Any:
        if expr.startswith("$"):
            try:
                return compile_path(expr).find(data, ctx)
            except PathNotFound:
                raise StatesError(
                    errors.PARAMETER_PATH_FAILURE,
                    f"path '{expr}' matches nothing in the template input",
                ) from None
        return evaluate(parse_intrinsic(expr), data, ctx)

    def _fail_field(self, st: State, expr: str, raw: Any, ctx: Any, field_name: str) -> str:
        if expr.startswith("$"):
            value = self._find(
                compile_reference_path(expr), raw, ctx, errors.RUNTIME, field_name, st
            )
        else:
            value = evaluate(parse_intrinsic(expr), raw, ctx)
        if not isinstance(value, str):
            raise StatesError(
                errors.RUNTIME,
                f"state '{st.name}': {field_name} must select a string, got {_kind(value)}",
            )
        return value

    def _positive_int(
        self, path: Path, data: Any, ctx: Any, field_name: str, st: State, minimum: int
    ) -> int:
        value = self._find(path, data, ctx, errors.RUNTIME, field_name, st)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            what = "a positive integer" if minimum else "a non-negative integer"
            raise StatesError(
                errors.RUNTIME, f"state '{st.name}': {field_name} must select {what}, got {value!r}"
            )
        return value

    # -- native format -------------------------------------------------------------------------
    def _end_guard(self, execution_id: str) -> str:
        return f"{execution_id}/end"

    def _native_call(self, grain: str, input: Any, lin: _Lineage) -> TaskCall:
        st = self.wf.states[grain]
        ctx = self._context(lin, st, _now_iso(self.clock), None)
        return TaskCall(grain, input, _encode({"k": "native", "s": grain}, lin), st.timeout_s, ctx)

    def _native_fail(self, lin: _Lineage, error: str, cause: str) -> list[Action]:
        if self.wf.concurrent and self.store.close_group(self._end_guard(lin.x)) is None:
            return []
        return [Failed(error, cause)]

    def _native_succeeded(
        self, tok: dict[str, Any], lin: _Lineage, output: Any, next_grains: Sequence[str] | None
    ) -> list[Action]:
        if self.wf.concurrent and not self.store.is_open([self._end_guard(lin.x)]):
            return []
        st = self.wf.states[tok["s"]]
        if st.potential_next:
            chosen = list(next_grains or [])
            wrong = [g for g in chosen if g not in st.potential_next]
            if wrong:
                return self._native_fail(
                    lin,
                    errors.RUNTIME,
                    f"grain '{st.name}' chose next grain(s) {', '.join(repr(g) for g in wrong)},"
                    f" which are not in its potentialNext ({', '.join(st.potential_next)})",
                )
        else:
            if next_grains:
                return self._native_fail(
                    lin,
                    errors.RUNTIME,
                    f"grain '{st.name}' chose next grain(s)"
                    f" {', '.join(repr(g) for g in next_grains)}"
                    " but declares no potentialNext",
                )
            chosen = list(st.next_grains)
        if st.name == self.wf.exit or (self.wf.exit is None and not chosen):
            if self.wf.concurrent and self.store.close_group(self._end_guard(lin.x)) is None:
                return []
            return [Finished(output)]
        actions: list[Action] = []
        for target in chosen:
            actions += self._native_arrive(st.name, target, output, lin)
        for target in st.potential_next:
            if target not in chosen and self.wf.states[target].join:
                actions += self._native_arrive(st.name, target, None, lin, skipped=True)
        return actions

    def _native_arrive(
        self, source: str, target: str, output: Any, lin: _Lineage, skipped: bool = False
    ) -> list[Action]:
        st = self.wf.states[target]
        if not st.join:
            return [self._native_call(target, output, lin)]
        gid = f"{lin.x}/join/{target}"
        self.store.open_group(gid, len(st.predecessors), "{}")
        slot = _dumps({"skip": True} if skipped else {"v": output})
        outcome = self.store.record_result(gid, st.predecessors.index(source), slot)
        if not outcome.completed:
            return []
        arrived = [json.loads(r) for r in outcome.results]
        inputs = [r["v"] for r in arrived if "v" in r]
        if not inputs:
            return []  # every predecessor chose another way: the join does not run
        return [self._native_call(target, inputs, lin)]


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _encode(tok: dict[str, Any], lin: _Lineage) -> str:
    body = {"v": TOKEN_VERSION, "x": lin.x, "n": lin.n, **tok, "fr": lin.fr, "cx": lin.cx}
    return _dumps(body)


def _decode(token: str) -> dict[str, Any]:
    try:
        tok = json.loads(token)
    except (TypeError, ValueError):
        raise ValueError("malformed workflow token: not JSON") from None
    if not isinstance(tok, dict) or tok.get("v") != TOKEN_VERSION or "s" not in tok:
        raise ValueError(f"malformed workflow token (version {TOKEN_VERSION} expected)")
    return tok


def _lineage(tok: dict[str, Any]) -> _Lineage:
    return _Lineage(tok["x"], tok["cx"], list(tok.get("fr", [])), int(tok.get("n", 0)))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
