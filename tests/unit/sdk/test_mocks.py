"""Mock files (``sand.mocks``): every rule of the loader with its message, and the emulator
answering mocked calls — Retry and Catch paths driven by canned errors, no process forked
for a mocked grain, the n-th call inside a Map, native workflows, the CLI options."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import psutil
import pytest
from click.testing import CliRunner
from sand.cli import cli
from sand.emulator import EmulationError, emulate
from sand.mocks import MockedReturn, MockedThrow, Mocker, MockError, load_mocks

from .conftest import EXAMPLES, AppFactory

ASL_WORKFLOW = {
    "StartAt": "Resize",
    "States": {
        "Resize": {
            "Type": "Task",
            "Resource": "resize",
            "Retry": [{"ErrorEquals": ["Grain.Busy"], "IntervalSeconds": 1, "MaxAttempts": 3}],
            "Catch": [{"ErrorEquals": ["Grain.Broken"], "ResultPath": "$.error", "Next": "Broken"}],
            "Next": "Each",
        },
        "Each": {
            "Type": "Map",
            "ItemsPath": "$.sizes",
            "ItemProcessor": {
                "StartAt": "Tag",
                "States": {"Tag": {"Type": "Task", "Resource": "tag", "End": True}},
            },
            "ResultPath": "$.tags",
            "End": True,
        },
        "Broken": {"Type": "Pass", "Result": "broken", "End": True},
    },
}
# The real grains leave a file behind (MARKER in the app directory) and would fail: a
# mocked call must never reach them.
REAL_GRAIN = """\
import pathlib

def handle(event, context):
    pathlib.Path(__file__).resolve().parents[1].joinpath("MARKER").write_text("ran")
    raise RuntimeError("the real grain ran")
"""
TAG_GRAIN = "def handle(event, context):\n    return {'real': event}\n"


@pytest.fixture
def app(make_app: AppFactory) -> Path:
    """An ASL app: Resize (Retry on Grain.Busy, Catch of Grain.Broken), then a Map of Tag."""
    return make_app(
        """\
        name: mocked
        grains:
          resize: grains/resize.py
          tag: grains/tag.py
        workflows:
          main: workflows/main.json
        """,
        {
            "grains/resize.py": REAL_GRAIN,
            "grains/tag.py": TAG_GRAIN,
            "workflows/main.json": json.dumps(ASL_WORKFLOW),
        },
    )


def workflows_of(app: Path) -> dict[str, Any]:
    from sand.app import load_app

    return {name: w.definition for name, w in load_app(app).workflows.items()}


def write(tmp_path: Path, text: str, name: str = "mocks.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def problems(app: Path, doc: Any) -> list[str]:
    with pytest.raises(MockError) as caught:
        load_mocks(doc, workflows_of(app))
    return list(caught.value.problems)


def doc(cases: dict[str, Any], responses: dict[str, Any], workflow: str = "main") -> dict[str, Any]:
    return {"Workflows": {workflow: {"TestCases": cases}}, "MockedResponses": responses}


OK = {"0": {"Return": {"size": 10}}}

# -- the loader -------------------------------------------------------------------------------


def test_load_yamlFile_buildsCasesAndResponses(app: Path, tmp_path: Path) -> None:
    """A YAML file with a range, a Throw and a Return loads into typed records."""
    path = write(
        tmp_path,
        """\
        Workflows:
          main:
            TestCases:
              RetryPath:
                resize: FailTwiceThenOk
        MockedResponses:
          FailTwiceThenOk:
            "0-1": {Throw: {Error: Grain.Busy, Cause: busy}}
            "2": {Return: {size: 10}}
        """,
    )
    case = load_mocks(path, workflows_of(app)).case("main", "RetryPath")
    response = case.responses["resize"]
    assert [response.outcome(n) for n in range(4)] == [
        MockedThrow("Grain.Busy", "busy"),
        MockedThrow("Grain.Busy", "busy"),
        MockedReturn({"size": 10}),
        MockedReturn({"size": 10}),  # past the last entry: the last entry again
    ]


def test_load_stateMachinesKey_andJsonFile_accepted(app: Path, tmp_path: Path) -> None:
    """Step Functions Local's key StateMachines works, and so does a JSON file."""
    text = json.dumps(
        {
            "StateMachines": {"main": {"TestCases": {"Happy": {"Resize": "Ok"}}}},
            "MockedResponses": {"Ok": OK},
        }
    )
    mocks = load_mocks(write(tmp_path, text, "mocks.json"), workflows_of(app))
    assert mocks.case("main", "Happy").responses["Resize"].outcome(0) == MockedReturn({"size": 10})


def test_load_unknownWorkflow_namesItAndTheAppsWorkflows(app: Path) -> None:
    """A workflow the app does not have is named with the ones it has."""
    assert problems(app, doc({"A": {"resize": "Ok"}}, {"Ok": OK}, workflow="mian")) == [
        "<mocks>: Workflows.mian: the app has no workflow 'mian' (it has: main);"
        " did you mean 'main'?"
    ]


def test_case_unknownCase_listsKnownCases(app: Path) -> None:
    """Choosing a case the file does not have lists the cases it has."""
    mocks = load_mocks(doc({"Happy": {"resize": "Ok"}, "Sad": {}}, {"Ok": OK}), workflows_of(app))
    with pytest.raises(
        MockError,
        match=r"workflow 'main' has no test case 'Hapy' \(known cases:"
        r" Happy, Sad\); did you mean 'Happy'\?",
    ):
        mocks.case("main", "Hapy")


def test_case_workflowWithoutCases_isNamed(app: Path) -> None:
    """Asking for a workflow the file has no cases for says which workflows it has."""
    mocks = load_mocks({"Workflows": {}, "MockedResponses": {}}, workflows_of(app))
    with pytest.raises(MockError, match="no test cases for workflow 'main'"):
        mocks.case("main", "Happy")


def test_load_keyNamingNoStateNorGrain_isRefused(app: Path) -> None:
    """A case key that is neither a Task state nor a grain of the workflow lists both."""
    assert problems(app, doc({"Happy": {"Rezise": "Ok"}}, {"Ok": OK})) == [
        "<mocks>: Workflows.main.TestCases.Happy.Rezise: names neither a Task state nor a grain"
        " of workflow 'main' (it has: Resize, Tag, resize, tag); did you mean 'Resize'?"
    ]


def test_load_keyNamingAPassState_isRefused(app: Path) -> None:
    """A state that calls no grain cannot be mocked."""
    assert problems(app, doc({"Happy": {"Broken": "Ok"}}, {"Ok": OK})) == [
        "<mocks>: Workflows.main.TestCases.Happy.Broken: state 'Broken' is a Pass state: only"
        " Task states call grains"
    ]


def test_load_undefinedResponse_isRefused(app: Path) -> None:
    """A case naming a response MockedResponses does not define lists the defined ones."""
    assert problems(app, doc({"Happy": {"resize": "Okay"}}, {"Ok": OK})) == [
        "<mocks>: Workflows.main.TestCases.Happy.resize: response 'Okay' is not defined in"
        " MockedResponses (defined: Ok); did you mean 'Ok'?"
    ]


@pytest.mark.parametrize(
    "entry",
    [{}, {"Return": 1, "Throw": {"Error": "E"}}, {"Value": 1}],
    ids=["neither", "both", "other-key"],
)
def test_load_entryNeitherOrBothReturnAndThrow_isRefused(app: Path, entry: Any) -> None:
    """An entry is exactly one of Return or Throw."""
    assert problems(app, doc({"H": {"resize": "R"}}, {"R": {"0": entry}})) == [
        "<mocks>: MockedResponses.R.0: needs exactly one of Return or Throw"
    ]


def test_load_throwWithoutError_isRefused(app: Path) -> None:
    """A Throw needs an Error name."""
    assert problems(app, doc({"H": {"resize": "R"}}, {"R": {"0": {"Throw": {"Cause": "c"}}}})) == [
        "<mocks>: MockedResponses.R.0.Throw: needs Error (a string) and optionally Cause"
    ]


@pytest.mark.parametrize(
    ("key", "rule"),
    [
        ("first", "a key is a call number 'n' or a range 'a-b' (0-based)"),
        ("01", "a key is a call number 'n' or a range 'a-b' (0-based)"),
        ("3-1", "range ends before it starts (1 < 3)"),
    ],
)
def test_load_badRangeKey_isRefused(app: Path, key: str, rule: str) -> None:
    """Call keys are numbers or ranges a-b with a <= b."""
    assert problems(app, doc({"H": {"resize": "R"}}, {"R": {key: {"Return": 1}}})) == [
        f"<mocks>: MockedResponses.R.{key}: {rule}"
    ]


def test_load_overlappingRanges_isRefused(app: Path) -> None:
    """Two entries covering one call are refused."""
    responses = {"R": {"0-2": {"Return": 1}, "2": {"Return": 2}}}
    assert problems(app, doc({"H": {"resize": "R"}}, responses)) == [
        "<mocks>: MockedResponses.R: entries overlap: call 2 is covered twice"
    ]


def test_load_gappedRanges_isRefused(app: Path) -> None:
    """Entries must cover the calls from 0 without a gap."""
    responses = {"R": {"0": {"Return": 1}, "3-4": {"Return": 2}}}
    assert problems(app, doc({"H": {"resize": "R"}}, responses)) == [
        "<mocks>: MockedResponses.R: entries leave a gap: no entry for call 1-2"
    ]


def test_load_nonJsonReturn_isRefused(app: Path, tmp_path: Path) -> None:
    """A YAML value that is no JSON value (a date, NaN) is refused, naming the entry."""
    path = write(
        tmp_path,
        """\
        Workflows: {main: {TestCases: {H: {resize: R}}}}
        MockedResponses:
          R:
            "0": {Return: {when: 2024-01-01}}
            "1": {Return: .nan}
        """,
    )
    with pytest.raises(MockError) as caught:
        load_mocks(path, workflows_of(app))
    assert [p.split(": not a JSON value")[0] for p in caught.value.problems] == [
        f"{path}: MockedResponses.R.0.Return",
        f"{path}: MockedResponses.R.1.Return",
    ]


def test_load_duplicateYamlKey_isRefusedWithItsLine(app: Path, tmp_path: Path) -> None:
    """The project's strict YAML loader refuses a key given twice, with the line."""
    path = write(
        tmp_path,
        """\
        Workflows: {main: {TestCases: {H: {resize: R}}}}
        MockedResponses:
          R: {"0": {Return: 1}}
          R: {"0": {Return: 2}}
        """,
    )
    with pytest.raises(MockError, match=r"mocks.yaml:4:3: malformed YAML: duplicate key 'R'"):
        load_mocks(path, workflows_of(app))


def test_load_unknownTopLevelKey_andBothWorkflowKeys_refused(app: Path) -> None:
    """Only Workflows (or StateMachines, not both) and MockedResponses are known."""
    cases = {"main": {"TestCases": {}}}
    assert problems(app, {"Workflows": cases, "StateMachines": cases, "Mocks": {}}) == [
        "<mocks>: Mocks: unknown key (allowed: Workflows, StateMachines, MockedResponses)",
        "<mocks>: Workflows: give Workflows or StateMachines, not both",
    ]


def test_load_everyProblemAtOnce(app: Path) -> None:
    """One error lists every problem of the file, not only the first."""
    found = problems(
        app, doc({"H": {"nope": "Ok", "resize": "Missing"}}, {"Ok": OK, "Bad": {"x": {}}})
    )
    assert len(found) == 3


def test_mocker_countsPerKey_stateBeforeGrain(app: Path) -> None:
    """A key naming the state wins over one naming its grain; counts are per key."""
    mocks = load_mocks(
        doc(
            {"H": {"Resize": "Two", "resize": "Ok"}},
            {"Two": {"0": {"Return": 0}, "1": {"Return": 1}}, "Ok": OK},
        ),
        workflows_of(app),
    )
    mocker = Mocker(mocks.case("main", "H"))
    assert mocker.answer("Resize", "resize") == ("Two", MockedReturn(0))
    assert mocker.answer("Other", "resize") == ("Ok", MockedReturn({"size": 10}))
    assert mocker.answer("Resize", "resize") == ("Two", MockedReturn(1))
    assert mocker.answer("Tag", "tag") is None


# -- the emulator with mocks ------------------------------------------------------------------


def no_children_left() -> bool:
    return psutil.Process().children(recursive=True) == []


RESPONSES = {
    "FailTwiceThenOk": {
        "0-1": {"Throw": {"Error": "Grain.Busy", "Cause": "busy"}},
        "2": {"Return": {"size": 10, "sizes": [1, 2]}},
    },
    "Broken": {"0": {"Throw": {"Error": "Grain.Broken", "Cause": "no disk"}}},
    "Ok": {"0": {"Return": {"sizes": []}}},
    "Tags": {"0": {"Return": "first"}, "1-2": {"Return": "second"}},
}


@pytest.mark.timeout(30)
def test_emulate_retryDrivenByFailTwiceThenOk_showsThreeMockedAttempts(app: Path) -> None:
    """Two canned Grain.Busy errors are retried; the third call succeeds; never forked."""
    mocks = doc({"RetryPath": {"resize": "FailTwiceThenOk", "tag": "Tags"}}, RESPONSES)
    result = emulate(app, {}, mocks=mocks, case="RetryPath", skip_waits=True)
    assert result.ok, result.cause
    assert result.output == {"size": 10, "sizes": [1, 2], "tags": ["first", "second"]}
    resize = [e for e in result.steps if e["state"] == "Resize" and e["type"].startswith("Task")]
    assert [e["type"] for e in resize] == [
        "TaskScheduled", "TaskStarted", "TaskFailed",
        "TaskScheduled", "TaskStarted", "TaskFailed",
        "TaskScheduled", "TaskStarted", "TaskSucceeded",
    ]  # fmt: skip
    started = [e for e in resize if e["type"] == "TaskStarted"]
    assert all(e["mocked"] is True and e["response"] == "FailTwiceThenOk" for e in started)
    assert all("pid" not in e for e in started)
    assert [e["type"] for e in result.steps].count("RetryScheduled") == 2
    assert not (app / "MARKER").exists()


@pytest.mark.timeout(30)
def test_emulate_catchPathByThrow(app: Path) -> None:
    """A canned error the state catches sends the execution down its Catch."""
    result = emulate(app, {"id": 1}, mocks=doc({"C": {"Resize": "Broken"}}, RESPONSES), case="C")
    assert result.ok
    assert result.output == "broken"
    caught = [e for e in result.steps if e["type"] == "Caught"]
    assert [(e["error"], e["cause"], e["next"]) for e in caught] == [
        ("Grain.Broken", "no disk", "Broken")
    ]


@pytest.mark.timeout(30)
def test_emulate_mockedGrainNeverForks_unmockedGrainRunsForReal(app: Path) -> None:
    """resize is mocked (its real code would write MARKER and fail); tag runs for real in
    a forked process (its TaskStarted has a pid)."""
    mocks = doc({"H": {"resize": "FailTwiceThenOk"}}, RESPONSES)
    result = emulate(app, {}, mocks=mocks, case="H", skip_waits=True)
    assert result.ok, result.cause
    assert result.output["tags"] == [{"real": 1}, {"real": 2}]
    assert not (app / "MARKER").exists()
    tag_started = [e for e in result.steps if e["type"] == "TaskStarted" and e["grain"] == "tag"]
    assert len(tag_started) == 2 and all(isinstance(e["pid"], int) for e in tag_started)
    assert all("mocked" not in e for e in tag_started)
    assert no_children_left()
    # and without mocks the real resize runs, proving the marker would have been written
    assert not emulate(app, {}).ok
    assert (app / "MARKER").read_text() == "ran"


@pytest.mark.timeout(30)
def test_emulate_mocksInsideMap_nthCallGetsNthEntry(app: Path) -> None:
    """Each Map item's call takes the next entry; past the last, the last entry repeats."""
    responses = {**RESPONSES, "Many": {"0": {"Return": {"sizes": [1, 2, 3, 4]}}}}
    mocks = doc({"M": {"resize": "Many", "Tag": "Tags"}}, responses)
    result = emulate(app, {}, mocks=mocks, case="M")
    assert result.ok, result.cause
    # calls 0, 1-2, then past the end: the entries in order, the last one reused
    assert result.output["tags"] == ["first", "second", "second", "second"]


NATIVE_WORKFLOW = """\
entry: first
grains:
  first: {next: second}
  second: {}
"""


@pytest.mark.timeout(30)
def test_emulate_nativeWorkflow_mockedByGrain(make_app: AppFactory) -> None:
    """A native workflow's grain is mocked by its name; a Throw fails the execution."""
    root = make_app(
        """\
        name: native
        grains: {first: grains/first.py, second: grains/second.py}
        workflows: {main: workflows/main.yaml}
        """,
        {
            "grains/first.py": REAL_GRAIN,
            "grains/second.py": "def handle(event, context):\n    return {'second': event}\n",
            "workflows/main.yaml": NATIVE_WORKFLOW,
        },
    )
    ok = {
        "Workflows": {"main": {"TestCases": {"Ok": {"first": "One"}, "Bad": {"second": "No"}}}},
        "MockedResponses": {
            "One": {"0": {"Return": 1}},
            "No": {"0": {"Throw": {"Error": "Nope", "Cause": "c"}}},
        },
    }
    result = emulate(root, {}, mocks=ok, case="Ok")
    assert result.ok, result.cause
    assert result.output == {"second": 1}
    assert not (root / "MARKER").exists()
    failed = emulate(root, {}, mocks=ok, case="Bad")
    assert (failed.error, failed.cause) == ("RuntimeError", "the real grain ran")  # first is real
    ok["Workflows"]["main"]["TestCases"]["Bad"]["first"] = "One"
    failed = emulate(root, {}, mocks=ok, case="Bad")
    assert (failed.error, failed.cause) == ("Nope", "c")


def test_emulate_mocksWithoutCase_isRefused(app: Path) -> None:
    """mocks and case go together."""
    with pytest.raises(EmulationError, match="mocks needs case"):
        emulate(app, {}, mocks=doc({}, {}))
    with pytest.raises(EmulationError, match="case needs mocks"):
        emulate(app, {}, case="Happy")


# -- the CLI ----------------------------------------------------------------------------------


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner(mix_stderr=False).invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.timeout(30)
def test_cli_emulateWithMocks_traceShowsMockedCalls(app: Path, tmp_path: Path) -> None:
    """--mocks/--case run the case; --trace marks the mocked calls."""
    path = tmp_path / "mocks.json"
    path.write_text(json.dumps(doc({"C": {"Resize": "Broken"}}, RESPONSES)))
    code, out, err = invoke("emulate", str(app), "--mocks", str(path), "--case", "C", "--trace")
    assert code == 0, err
    assert json.loads(out) == "broken"
    assert "TaskStarted  grain resize  host emulator  mocked Broken" in err


def test_cli_emulateMocksWithoutCase_exit2(app: Path, tmp_path: Path) -> None:
    """--mocks without --case is a usage error."""
    path = write(tmp_path, "Workflows: {}\n")
    code, _, err = invoke("emulate", str(app), "--mocks", str(path))
    assert code == 2
    assert "--mocks needs --case" in err


def test_cli_emulateUnknownCase_exit2ListsCases(app: Path, tmp_path: Path) -> None:
    """An unknown case is refused (exit 2) with the known ones."""
    path = tmp_path / "mocks.json"
    path.write_text(json.dumps(doc({"C": {"Resize": "Broken"}}, RESPONSES)))
    code, out, err = invoke("emulate", str(app), "--mocks", str(path), "--case", "D")
    assert code == 2 and out == ""
    assert "workflow 'main' has no test case 'D' (known cases: C)" in err


# -- the example ------------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_example_aslOrdersMocks_everyCaseEndsAsItsFileSays() -> None:
    """examples/asl-orders/mocks.yaml: each case ends as its 'expected' comment file says."""
    root = EXAMPLES / "asl-orders"
    expected = json.loads((root / "mocks-expected.json").read_text())
    assert set(expected) == {"HappyPath", "RetryPath", "DeclinedPayment", "InvalidOrder"}
    for case, want in expected.items():
        result = emulate(root, want["input"], mocks=root / "mocks.yaml", case=case, skip_waits=True)
        assert result.to_json() == want["result"], case


@pytest.mark.timeout(30)
def test_example_approvalMocks_theMockIsTheCallbacksOutcome() -> None:
    """examples/approval/mocks.yaml: a mocked callback task's mock is the outcome sent with its
    token (its grain does not run)."""
    root = EXAMPLES / "approval"
    expected = json.loads((root / "mocks-expected.json").read_text())
    assert set(expected) == {"Approved", "Rejected"}
    for case, want in expected.items():
        result = emulate(root, want["input"], mocks=root / "mocks.yaml", case=case, skip_waits=True)
        assert result.to_json() == want["result"], case
        types = [e["type"] for e in result.steps if e.get("state") == "Approve"]
        assert "TaskSubmitted" not in types, "a mocked callback task runs no grain"


@pytest.mark.timeout(30)
def test_example_approvalUnmocked_theGrainRuns_andTheWaitTimesOut() -> None:
    """Unmocked, the grain runs with its token and nobody answers: the heartbeat runs out
    first (skip_waits fires it at once) and the Catch sends it to Expired."""
    result = emulate(EXAMPLES / "approval", {"order_id": "A-7", "amount": 1200}, skip_waits=True)
    assert (result.error, result.cause) == ("ApprovalExpired", "nobody answered within a day")
    submitted = next(e for e in result.steps if e["type"] == "TaskSubmitted")
    assert submitted["output"] == {"asked": "A-7"}
    assert submitted["task_token"].count(".") == 1 and submitted["heartbeat_s"] == 3600
    timed_out = next(e for e in result.steps if e["type"] == "TaskTimedOut")
    assert timed_out["error"] == "States.HeartbeatTimeout"
