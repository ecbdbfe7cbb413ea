"""Mock files for the emulator: replace chosen grains by canned results or errors.

The format follows the MockConfigFile of AWS Step Functions Local (its ``StateMachines``
key is accepted as well as SAND's ``Workflows``)::

    Workflows:                    # or StateMachines
      main:                       # a workflow of the app
        TestCases:
          HappyPath:
            Resize: ResizeOk      # a Task state (ASL) or a grain -> a response name
          RetryPath:
            resize: FailTwiceThenOk
    MockedResponses:
      ResizeOk:
        "0": {Return: {size: 10}}
      FailTwiceThenOk:
        "0-1": {Throw: {Error: Grain.Busy, Cause: busy}}
        "2": {Return: {size: 10}}

A case key names a Task state or a grain of the workflow; a state name wins over a grain
name. The n-th call (0-based) of a key, counted across the execution (Map items and
retries included, in the order the engine issues the calls), takes the entry whose key is
``"n"`` or a range ``"a-b"`` holding n; calls past the last entry take the last entry
again. ``Return`` is the grain's output, ``Throw`` fails the call with ``Error`` and
``Cause``. Grains no key names run for real.

:func:`load_mocks` checks a file against the app and raises one :class:`MockError` listing
every problem; :meth:`MockFile.case` picks a test case; a :class:`Mocker` answers the calls
of one execution.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

import yaml
from sand_workflows.actions import AwaitCallback, TaskCall
from sand_workflows.model import GrainState, TaskState, Workflow, WorkflowKind
from sand_workflows.parsing import load_json, load_yaml
from sand_workflows.tokens import decode_token

from sand.suggest import did_you_mean

WORKFLOWS_KEYS = ("Workflows", "StateMachines")
TEST_CASES = "TestCases"
RESPONSES = "MockedResponses"
RETURN = "Return"
THROW = "Throw"
_RANGE = re.compile(r"(0|[1-9][0-9]*)(?:-(0|[1-9][0-9]*))?")
# Where problems of a mock given as a mapping (not a file) are said to be.
INLINE = "<mocks>"


class MockError(Exception):
    """A mock file (or a choice of case) that cannot be used; ``problems`` lists every
    reason, each naming the file, the case or response and the rule broken."""

    def __init__(self, problems: list[str]) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True, slots=True)
class MockedReturn:
    """A mocked call that returns ``output``."""

    output: Any


@dataclass(frozen=True, slots=True)
class MockedThrow:
    """A mocked call that fails with ``error`` and ``cause``."""

    error: str
    cause: str


MockOutcome = MockedReturn | MockedThrow


def callback_outcome(outcome: MockOutcome) -> dict[str, Any]:
    """``outcome`` as the end of a callback task's wait (``Engine.callback_ended``): what was
    sent with its token."""
    if isinstance(outcome, MockedReturn):
        return {"output": outcome.output}
    return {"error": outcome.error, "cause": outcome.cause}


@dataclass(frozen=True, slots=True)
class MockedEntry:
    """The outcome of calls ``first`` to ``last`` (0-based, both included)."""

    first: int
    last: int
    outcome: MockOutcome


@dataclass(frozen=True, slots=True)
class MockedResponse:
    """A named sequence of outcomes, one per call; ``entries`` cover 0..n without gaps."""

    name: str
    entries: tuple[MockedEntry, ...]

    def outcome(self, call: int) -> MockOutcome:
        """The outcome of call number ``call`` (0-based); past the end, the last entry's."""
        for entry in self.entries:
            if entry.first <= call <= entry.last:
                return entry.outcome
        return self.entries[-1].outcome


@dataclass(frozen=True, slots=True)
class TestCase:
    """One test case of a workflow: case key (a Task state or a grain) -> response."""

    __test__ = False  # not a pytest test class, whatever its name

    workflow: str
    name: str
    responses: Mapping[str, MockedResponse]


@dataclass(frozen=True, slots=True)
class MockFile:
    """A checked mock file: its test cases by workflow, then by name."""

    source: str
    cases: Mapping[str, Mapping[str, TestCase]] = field(default_factory=dict)

    def case(self, workflow: str, name: str) -> TestCase:
        """The test case ``name`` of ``workflow``; :class:`MockError` naming the known ones
        when there is none."""
        cases = self.cases.get(workflow)
        if cases is None:
            known = ", ".join(sorted(self.cases)) or "none"
            raise MockError(
                [
                    f"{self.source}: no test cases for workflow '{workflow}' (the file has"
                    f" cases for: {known})" + did_you_mean(workflow, self.cases)
                ]
            )
        case = cases.get(name)
        if case is None:
            known = ", ".join(sorted(cases)) or "none"
            raise MockError(
                [
                    f"{self.source}: workflow '{workflow}' has no test case '{name}' (known"
                    f" cases: {known})" + did_you_mean(name, cases)
                ]
            )
        return case


class CallAnswers(Protocol):
    """What the emulator asks before it runs a task call: a response name and the outcome to
    report instead of running it, or None to run the grain for real."""

    def answer_call(self, call: TaskCall) -> tuple[str, MockOutcome] | None: ...

    def answer_wait(self, wait: AwaitCallback) -> dict[str, Any] | None:
        """The outcome a callback task's wait ends with once its grain ran here (``{"output"}``
        or ``{"error", "cause"}``), or None: nobody answers, it times out."""
        ...


class Mocker:
    """Answers the task calls of one execution from a test case; counts calls per key.

    Not thread-safe: one driver loop asks it, in the order the engine issued the calls.
    """

    def __init__(self, case: TestCase) -> None:
        self.case = case
        self._calls: dict[str, int] = {}

    def key_for(self, state: str | None, grain: str) -> str | None:
        """The case key that mocks a call of ``grain`` from ``state`` (the state's name
        first), or None when the call runs for real."""
        if state is not None and state in self.case.responses:
            return state
        return grain if grain in self.case.responses else None

    def answer_call(self, call: TaskCall) -> tuple[str, MockOutcome] | None:
        """:meth:`answer` for the call's state and grain."""
        return self.answer(decode_token(call.token).state, call.grain)

    def answer_wait(self, wait: AwaitCallback) -> dict[str, Any] | None:
        """None: a mocked callback task never runs its grain, so an unmocked one's wait is
        answered by nobody."""
        return None

    def answer(self, state: str | None, grain: str) -> tuple[str, MockOutcome] | None:
        """The response name and outcome of the next call of ``grain`` from ``state``, or
        None when no key of the case names either (the grain runs for real)."""
        key = self.key_for(state, grain)
        if key is None:
            return None
        response = self.case.responses[key]
        call = self._calls.get(key, 0)
        self._calls[key] = call + 1
        return response.name, response.outcome(call)


def load_mocks(source: str | Path | Mapping[str, Any], workflows: Mapping[str, Any]) -> MockFile:
    """Read and check a mock file (JSON or YAML; a mapping is taken as already parsed)
    against the workflows of an app (name -> ``sand_workflows.model.Workflow``).

    Raises :class:`MockError` listing every problem; a key given twice in one mapping is
    one of them (the project's strict parser).
    """
    if isinstance(source, Mapping):
        return _Checker(INLINE, workflows).check(source)
    path = Path(source)
    shown = str(source)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MockError([f"{shown}: cannot be read: {exc}"]) from None
    return _Checker(shown, workflows).check(_parse(shown, path, text))


def _parse(shown: str, path: Path, text: str) -> Any:
    if path.suffix == ".json":
        try:
            return load_json(text)
        except json.JSONDecodeError as exc:
            raise MockError(
                [f"{shown}:{exc.lineno}:{exc.colno}: malformed JSON: {exc.msg}"]
            ) from None
    try:
        return load_yaml(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{shown}:{mark.line + 1}:{mark.column + 1}" if mark is not None else shown
        raise MockError([f"{where}: malformed YAML: {exc.problem or exc.context}"]) from None
    except yaml.YAMLError as exc:
        raise MockError([f"{shown}: malformed YAML: {exc}"]) from None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


class _Checker:
    """Collects every problem of one mock document, then builds the records."""

    def __init__(self, source: str, workflows: Mapping[str, Any]) -> None:
        self.source = source
        self.workflows = workflows
        self.problems: list[str] = []

    def problem(self, where: str, rule: str) -> None:
        self.problems.append(f"{self.source}: {where}: {rule}")

    def check(self, doc: Any) -> MockFile:
        if not isinstance(doc, Mapping):
            raise MockError([f"{self.source}: must be a mapping, got {_kind(doc)}"])
        allowed = (*WORKFLOWS_KEYS, RESPONSES)
        for key in doc:
            if key not in allowed:
                self.problem(str(key), f"unknown key (allowed: {', '.join(allowed)})")
        given = [k for k in WORKFLOWS_KEYS if k in doc]
        if len(given) == 2:
            self.problem("Workflows", "give Workflows or StateMachines, not both")
        if not given:
            self.problem("Workflows", "missing (the test cases of each workflow)")
        responses = self.responses(doc.get(RESPONSES, {}))
        cases: dict[str, Mapping[str, TestCase]] = {}
        for key in given[:1]:
            section = doc[key]
            if not isinstance(section, Mapping):
                self.problem(key, f"must be a mapping of workflow names, got {_kind(section)}")
                continue
            for workflow, body in section.items():
                found = self.workflow_cases(str(workflow), body, responses)
                if found is not None:
                    cases[str(workflow)] = MappingProxyType(found)
        if self.problems:
            raise MockError(self.problems)
        return MockFile(self.source, MappingProxyType(cases))

    # -- MockedResponses ---------------------------------------------------------------------
    def responses(self, section: Any) -> dict[str, MockedResponse | None]:
        """Every response by name (None for one with problems, so that a case naming it is
        not also reported as naming an undefined response)."""
        if not isinstance(section, Mapping):
            self.problem(RESPONSES, f"must be a mapping of response names, got {_kind(section)}")
            return {}
        return {str(name): self.response(str(name), body) for name, body in section.items()}

    def response(self, name: str, body: Any) -> MockedResponse | None:
        where = f"{RESPONSES}.{name}"
        if not isinstance(body, Mapping) or not body:
            self.problem(where, f"must be a non-empty mapping of call numbers, got {_kind(body)}")
            return None
        before = len(self.problems)
        entries = []
        for key, value in body.items():
            match = _RANGE.fullmatch(str(key))
            if match is None:
                self.problem(
                    f"{where}.{key}", "a key is a call number 'n' or a range 'a-b' (0-based)"
                )
                continue
            first = int(match.group(1))
            last = int(match.group(2) or first)
            if last < first:
                self.problem(f"{where}.{key}", f"range ends before it starts ({last} < {first})")
                continue
            outcome = self.outcome(f"{where}.{key}", value)
            if outcome is not None:
                entries.append(MockedEntry(first, last, outcome))
        entries.sort(key=lambda e: e.first)
        expected = 0
        for entry in entries:
            if entry.first < expected:
                self.problem(
                    where,
                    f"entries overlap: call {entry.first} is covered twice",
                )
            elif entry.first > expected:
                missing = (
                    f"{expected}"
                    if entry.first == expected + 1
                    else f"{expected}-{entry.first - 1}"
                )
                self.problem(where, f"entries leave a gap: no entry for call {missing}")
            expected = max(expected, entry.last + 1)
        if len(self.problems) > before:
            return None
        return MockedResponse(name, tuple(entries))

    def outcome(self, where: str, value: Any) -> MockOutcome | None:
        if not isinstance(value, Mapping) or (RETURN in value) == (THROW in value):
            self.problem(where, "needs exactly one of Return or Throw")
            return None
        extra = [str(k) for k in value if k not in (RETURN, THROW)]
        if extra:
            self.problem(where, f"unknown key {extra[0]!r} (an entry has Return or Throw)")
            return None
        if RETURN in value:
            output = value[RETURN]
            try:
                json.dumps(output, allow_nan=False)
            except (TypeError, ValueError) as exc:
                self.problem(f"{where}.Return", f"not a JSON value: {exc}")
                return None
            if not _json_keys(output):
                self.problem(f"{where}.Return", "not a JSON value: every key must be a string")
                return None
            return MockedReturn(output)
        throw = value[THROW]
        if not isinstance(throw, Mapping) or not isinstance(throw.get("Error"), str):
            self.problem(f"{where}.Throw", "needs Error (a string) and optionally Cause")
            return None
        unknown = [str(k) for k in throw if k not in ("Error", "Cause")]
        if unknown:
            self.problem(f"{where}.Throw", f"unknown key {unknown[0]!r} (Error, Cause)")
            return None
        cause = throw.get("Cause", "")
        if not isinstance(cause, str):
            self.problem(f"{where}.Throw.Cause", f"must be a string, got {_kind(cause)}")
            return None
        return MockedThrow(throw["Error"], cause)

    # -- Workflows ---------------------------------------------------------------------------
    def workflow_cases(
        self, workflow: str, body: Any, responses: Mapping[str, MockedResponse | None]
    ) -> dict[str, TestCase] | None:
        where = f"Workflows.{workflow}"
        wf = self.workflows.get(workflow)
        if wf is None:
            known = ", ".join(sorted(self.workflows)) or "none"
            self.problem(
                where,
                f"the app has no workflow '{workflow}' (it has: {known})"
                + did_you_mean(workflow, self.workflows),
            )
            return None
        if not isinstance(body, Mapping) or set(body) != {TEST_CASES}:
            self.problem(where, "must be a mapping with one key, TestCases")
            return None
        section = body[TEST_CASES]
        if not isinstance(section, Mapping):
            self.problem(f"{where}.TestCases", f"must be a mapping, got {_kind(section)}")
            return None
        states, grains = _mockable(wf)
        cases: dict[str, TestCase] = {}
        for case_name, keys in section.items():
            case_where = f"{where}.TestCases.{case_name}"
            if not isinstance(keys, Mapping):
                self.problem(
                    case_where, f"must map states or grains to responses, got {_kind(keys)}"
                )
                continue
            found: dict[str, MockedResponse] = {}
            for key, response_name in keys.items():
                key_where = f"{case_where}.{key}"
                rule = _key_problem(str(key), wf, states, grains)
                if rule is not None:
                    self.problem(key_where, rule)
                if not isinstance(response_name, str):
                    self.problem(key_where, f"must name a response, got {_kind(response_name)}")
                    continue
                if response_name not in responses:
                    known = ", ".join(sorted(responses)) or "none"
                    self.problem(
                        key_where,
                        f"response '{response_name}' is not defined in MockedResponses (defined:"
                        f" {known})" + did_you_mean(response_name, responses),
                    )
                    continue
                response = responses[response_name]
                if rule is None and response is not None:
                    found[str(key)] = response
            cases[str(case_name)] = TestCase(workflow, str(case_name), MappingProxyType(found))
        return cases


def _mockable(wf: Workflow) -> tuple[set[str], set[str]]:
    """The Task states and the grains of a workflow that a case key may name."""
    if wf.kind == WorkflowKind.NATIVE:
        grains = {name for name, st in wf.states.items() if isinstance(st, GrainState)}
        return set(), grains
    tasks = {name for name, st in wf.states.items() if isinstance(st, TaskState)}
    grains = {st.resource for st in wf.states.values() if isinstance(st, TaskState)}
    return tasks, grains


def _key_problem(key: str, wf: Workflow, states: set[str], grains: set[str]) -> str | None:
    if key in states or key in grains:
        return None
    other = wf.states.get(key)
    if other is not None and wf.kind == WorkflowKind.ASL:
        kind = type(other).__name__.removesuffix("State")
        return f"state '{key}' is a {kind} state: only Task states call grains"
    names = sorted(states | grains)
    return (
        f"names neither a Task state nor a grain of workflow '{wf.name}' (it has:"
        f" {', '.join(names) or 'none'})" + did_you_mean(key, names)
    )


def _json_keys(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_keys(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_json_keys(v) for v in value)
    return True
