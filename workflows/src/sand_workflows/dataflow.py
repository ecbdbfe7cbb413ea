"""Input and output processing of a state (spec "Input and Output Processing").

InputPath, Parameters, ResultSelector, ResultPath, OutputPath, Payload Templates, the
context object ``$$`` and the run-time paths of single fields (TimeoutSecondsPath,
ErrorPath...); for JSONata states Arguments, Output and ``$states``; for both, Assign
(decision 0020). Pure functions: every failure is a ``StatesError`` naming the state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from . import errors, history, variables
from .errors import StatesError
from .intrinsics import evaluate, parse_intrinsic
from .jsonata_lang import Template
from .model import (
    FailState,
    FilterState,
    ParallelState,
    PassState,
    RecoverableState,
    State,
    TaskState,
    Workflow,
)
from .paths import (
    Path,
    PathNotFound,
    PathWriteError,
    compile_path,
    compile_reference_path,
    json_kind,
    set_at,
)
from .tokens import Lineage


def now_iso(clock: Callable[[], datetime]) -> str:
    """``clock()`` as an ISO 8601 UTC timestamp with milliseconds (``...T10:00:00.000Z``)."""
    return clock().astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class ContextObject(dict[str, Any]):
    """The context object ``$$`` (a plain JSON object to everything that serialises it),
    carrying the workflow variables visible to the state: ``$name`` paths read them."""

    __slots__ = ("variables",)

    def __init__(self, values: Mapping[str, Any], variables: Mapping[str, Any]) -> None:
        super().__init__(values)
        self.variables = variables

    def for_item(self, index: int, value: Any) -> ContextObject:
        """The context of one Map iteration's ItemSelector (``$$.Map.Item``)."""
        return ContextObject(
            {**self, "Map": {"Item": {"Index": index, "Value": value}}}, self.variables
        )


def context_object(
    workflow: Workflow,
    lineage: Lineage,
    state: State,
    entered_time: str,
    retry_counts: tuple[int, ...],
) -> ContextObject:
    """The context object ``$$`` of ``state`` (Map.Item is added by the Map state)."""
    execution = lineage.execution
    values = {
        "Execution": {
            "Id": execution.id,
            "Input": execution.input,
            "Name": execution.id,
            "StartTime": execution.start_time,
            "RedriveCount": execution.redrive_count,
            # only in a redriven run, as in Step Functions
            **({"RedriveTime": execution.redrive_time} if execution.redrive_count else {}),
        },
        "StateMachine": {"Id": workflow.source, "Name": workflow.name},
        "State": {"Name": state.name, "EnteredTime": entered_time, "RetryCount": sum(retry_counts)},
    }
    return ContextObject(values, lineage.variables)


def find(path: Path, data: Any, ctx: Any, field_name: str, state: State) -> Any:
    """The node ``path`` selects; a path matching nothing is States.Runtime."""
    try:
        return path.find(data, ctx)
    except PathNotFound:
        if path.variable is not None and path.variable not in (
            getattr(ctx, "variables", None) or {}
        ):
            raise StatesError(
                errors.RUNTIME,
                f"state '{state.name}': {field_name} '{path.text}': variable"
                f" '${path.variable}' has no value here",
            ) from None
        raise StatesError(
            errors.RUNTIME,
            f"state '{state.name}': {field_name} '{path.text}' matches nothing in the input",
        ) from None


def input_path(st: FilterState, raw: Any, ctx: Any) -> Any:
    selected = _filter(st.input_path, raw, ctx, "InputPath", st)
    history.step("input_path", selected)
    return selected


def output_path(st: FilterState, out: Any, ctx: Any) -> Any:
    selected = _filter(st.output_path, out, ctx, "OutputPath", st)
    history.step("output_path", selected)
    return selected


def _filter(path: Path | None, data: Any, ctx: Any, field_name: str, st: State) -> Any:
    # Spec "InputPath, OutputPath": null selects {}; "$" the whole value. A variable
    # ("$level") or the context object ("$$") selects that, not the value (issue 23).
    if path is None:
        return {}
    if path.steps == () and path.variable is None and not path.context:
        return data
    return find(path, data, ctx, field_name, st)


def parameters(st: TaskState | PassState | ParallelState, selected: Any, ctx: Any) -> Any:
    """Parameters applied to the input InputPath selected."""
    if st.parameters is None:
        return selected
    value = payload(st.parameters, selected, ctx)
    history.step("parameters", value)
    return value


def effective_input(st: TaskState | PassState | ParallelState, raw: Any, ctx: Any) -> Any:
    """InputPath, then Parameters."""
    return parameters(st, input_path(st, raw, ctx), ctx)


def select_result(st: PassState | RecoverableState, result: Any, ctx: Any) -> Any:
    """ResultSelector applied to a state's result."""
    if isinstance(st, RecoverableState) and st.result_selector is not None:
        result = payload(st.result_selector, result, ctx)
        history.step("result_selector", result)
    return result


def place_result(st: PassState | RecoverableState, raw: Any, result: Any, ctx: Any) -> Any:
    """ResultPath (into the raw input), then OutputPath."""
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
    history.step("result_path", out)
    return output_path(st, out, ctx)


def payload(template: Any, data: Any, ctx: Any) -> Any:
    """Process a Payload Template (spec "Payload Template"), however deeply nested."""
    if isinstance(template, dict):
        out: dict[str, Any] = {}
        for key, value in template.items():
            if key.endswith(".$") and isinstance(value, str):
                out[key[:-2]] = _dynamic(value, data, ctx)
            else:
                out[key] = payload(value, data, ctx)
        return out
    if isinstance(template, list):
        return [payload(v, data, ctx) for v in template]
    return template


def _dynamic(expr: str, data: Any, ctx: Any) -> Any:
    if expr.startswith("$"):
        try:
            return compile_path(expr).find(data, ctx)
        except PathNotFound:
            raise StatesError(
                errors.PARAMETER_PATH_FAILURE,
                f"path '{expr}' matches nothing in the template input",
            ) from None
    return evaluate(parse_intrinsic(expr), data, ctx)


def fail_field(st: FailState, expr: str, raw: Any, ctx: Any, field_name: str) -> str:
    """The string an ErrorPath/CausePath (reference path or intrinsic) selects."""
    if expr.startswith("$"):
        value = find(compile_reference_path(expr), raw, ctx, field_name, st)
    else:
        value = evaluate(parse_intrinsic(expr), raw, ctx)
    if not isinstance(value, str):
        raise StatesError(
            errors.RUNTIME,
            f"state '{st.name}': {field_name} must select a string, got {json_kind(value)}",
        )
    return value


def whole_number(path: Path, data: Any, ctx: Any, field_name: str, st: State, minimum: int) -> int:
    """The integer ≥ ``minimum`` (0 or 1) a ``*Path`` field selects; 2.0 counts as 2."""
    value = find(path, data, ctx, field_name, st)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        what = "a positive integer" if minimum else "a non-negative integer"
        raise StatesError(
            errors.RUNTIME, f"state '{st.name}': {field_name} must select {what}, got {value!r}"
        )
    return value


# -- variables and JSONata ------------------------------------------------------------------
def finish_result(
    st: PassState | RecoverableState, raw: Any, result: Any, ctx: ContextObject, lin: Lineage
) -> tuple[Any, Lineage]:
    """A state's result -> its output, and its lineage once its Assign took effect.

    JSONPath: ResultSelector, Assign (``$`` is the selected result), ResultPath,
    OutputPath. JSONata: Assign and Output, both seeing ``$states.result`` and the
    variables as they were at state entry.
    """
    if st.jsonata:
        states = {"input": raw, "result": result, "context": ctx}
        after = assign_variables(st, st.assign, lin, ctx, states=states)
        return output(st, states, lin, default=result), after
    selected = select_result(st, result, ctx)
    after = assign_variables(st, st.assign, lin, ctx, data=selected)
    return place_result(st, raw, selected, ctx), after


def assign_variables(
    st: State,
    assign: Any,
    lin: Lineage,
    ctx: ContextObject,
    *,
    data: Any = None,
    states: Mapping[str, Any] | None = None,
) -> Lineage:
    """``lin`` with ``assign`` (a state's, a Choice Rule's or a Catcher's Assign) applied.

    A JSONPath Assign is a Payload Template over ``data``; a JSONata one is evaluated
    with ``states``. Either sees the variables of ``lin`` (those at state entry).
    """
    if assign is None:
        return lin
    if isinstance(assign, Template):
        new = assign.evaluate(st.name, "Assign", states or {}, lin.variables)
    else:
        new = payload(assign, data, ctx)
    values = variables.assign(st.name, lin.variables, new)
    history.step("variables", values)
    return lin.with_variables(values)


def output(st: State, states: Mapping[str, Any], lin: Lineage, default: Any) -> Any:
    """A JSONata state's Output (``default`` when it has none)."""
    return output_of(st, st.output, states, lin, default)


def output_of(
    st: State, template: Template | None, states: Mapping[str, Any], lin: Lineage, default: Any
) -> Any:
    """The Output ``template`` of ``st`` (its own, or a Choice Rule's) evaluated;
    ``default`` when there is none."""
    if template is None:
        return default
    value = template.evaluate(st.name, "Output", states, lin.variables)
    history.step("output", value)
    return value


def arguments(st: TaskState | ParallelState, raw: Any, ctx: ContextObject, lin: Lineage) -> Any:
    """A JSONata state's Arguments (its raw input when it has none)."""
    if st.arguments is None:
        return raw
    value = st.arguments.evaluate(st.name, "Arguments", jsonata_states(raw, ctx), lin.variables)
    history.step("arguments", value)
    return value


def jsonata_states(raw: Any, ctx: ContextObject) -> dict[str, Any]:
    """``$states`` of a field evaluated before the state has a result."""
    return {"input": raw, "context": ctx}


def jsonata_whole_number(
    template: Template, st: State, field_name: str, states: Mapping[str, Any], minimum: int
) -> int:
    """The integer >= ``minimum`` a JSONata field yields (TimeoutSeconds, Seconds...)."""
    value = template.evaluate(st.name, field_name, states, _variables_of(states))
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        what = "a positive integer" if minimum else "a non-negative integer"
        raise StatesError(
            errors.QUERY_EVALUATION_ERROR,
            f"state '{st.name}' field '{field_name}': the expression must yield {what},"
            f" got {json_kind(value)} {value!r}",
        )
    return value


def jsonata_string(
    template: Template, st: State, field_name: str, states: Mapping[str, Any]
) -> str:
    """The string a JSONata field yields (Fail Error/Cause, Wait Timestamp)."""
    value = template.evaluate(st.name, field_name, states, _variables_of(states))
    if not isinstance(value, str):
        raise StatesError(
            errors.QUERY_EVALUATION_ERROR,
            f"state '{st.name}' field '{field_name}': the expression must yield a string,"
            f" got {json_kind(value)}",
        )
    return value


def _variables_of(states: Mapping[str, Any]) -> Mapping[str, Any]:
    ctx = states.get("context")
    return getattr(ctx, "variables", None) or {}
