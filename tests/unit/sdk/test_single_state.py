"""``sand.test_state`` and ``sand test-state``: one state of an app's workflow run alone,
its Task mocked or its grain forked for real, the inspection shown as a table or JSON,
exit codes 0 (SUCCEEDED, CAUGHT_ERROR, RETRIABLE), 1 (FAILED), 2 (cannot run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from sand import test_state
from sand.cli import cli
from sand.single_state import StateTestError

from .conftest import EXAMPLES, AppFactory

ORDERS = EXAMPLES / "asl-orders"
ORDER = {"order_id": "A-1", "customer": "ada", "items": [{"sku": "fig", "qty": 2}]}


@pytest.mark.timeout(30)
def test_task_mockedError_caught_nextIsCatchersNext() -> None:
    """A mocked error the Catch takes: CAUGHT_ERROR, next state the catcher's Next."""
    result = test_state(ORDERS, "Validate", ORDER, mock_error=("InvalidOrder", "no items"))
    assert result.status == "CAUGHT_ERROR"
    assert (result.next_state, result.error, result.cause) == (
        "Rejected",
        "InvalidOrder",
        "no items",
    )
    assert result.output == {**ORDER, "error": {"Error": "InvalidOrder", "Cause": "no items"}}


@pytest.mark.timeout(30)
def test_task_mockedResult_goesThroughResultPath() -> None:
    """A mocked result is the grain's result; ResultPath null keeps the input."""
    result = test_state(ORDERS, "Validate", ORDER, mock_result={"ignored": True})
    assert (result.status, result.next_state, result.output) == ("SUCCEEDED", "PriceItems", ORDER)
    assert result.inspection["result"] == {"ignored": True}


@pytest.mark.timeout(30)
def test_task_realGrainForked_retriable() -> None:
    """Without a mock the real grain runs (price-item is busy on a fig's first call):
    the state would be retried, so the test stops RETRIABLE."""
    item = {"order_id": "A-1", "sku": "fig", "qty": 1, "line": 0}
    result = test_state(ORDERS, "PriceItem", item)
    assert (result.status, result.error) == ("RETRIABLE", "PriceServiceBusy")
    assert result.cause == "no price for fig yet, attempt 1"


@pytest.mark.timeout(30)
def test_map_innerTaskMockedByAMockFile(tmp_path: Path) -> None:
    """The inner Tasks of a Map take the mock file's responses, one call per item."""
    mocks = {
        "Workflows": {"main": {"TestCases": {"Priced": {"PriceItem": "Lines"}}}},
        "MockedResponses": {
            "Lines": {"0": {"Return": {"amount_cents": 1}}, "1": {"Return": {"amount_cents": 2}}}
        },
    }
    order = {**ORDER, "items": [{"sku": "fig", "qty": 2}, {"sku": "pear", "qty": 1}]}
    result = test_state(ORDERS, "PriceItems", order, mocks=mocks, case="Priced")
    assert (result.status, result.next_state) == ("SUCCEEDED", "Summarize")
    assert result.inspection["result"] == [{"amount_cents": 1}, {"amount_cents": 2}]
    assert result.output["lines"] == [{"amount_cents": 1}, {"amount_cents": 2}]


@pytest.mark.timeout(30)
def test_task_mockedResult_resultSelector_grainNeverRuns(make_app: AppFactory) -> None:
    """A mocked result goes through ResultSelector and ResultPath; the real grain (which
    would leave a file behind and fail) never runs."""
    workflow = {
        "StartAt": "Resize",
        "States": {
            "Resize": {
                "Type": "Task",
                "Resource": "resize",
                "ResultSelector": {"px.$": "$.size.width"},
                "ResultPath": "$.resized",
                "Next": "Done",
            },
            "Done": {"Type": "Succeed"},
        },
    }
    grain = (
        "import pathlib\n"
        "def handle(event, context):\n"
        "    pathlib.Path(__file__).resolve().parents[1].joinpath('RAN').write_text('x')\n"
        "    raise RuntimeError('real')\n"
    )
    root = make_app(
        "name: thumbs\ngrains: {resize: grains/resize.py}\nworkflows: {main: main.json}\n",
        {"grains/resize.py": grain, "main.json": json.dumps(workflow)},
    )
    result = test_state(
        root, "Resize", {"id": 3}, mock_result={"size": {"width": 64, "height": 48}}
    )
    assert (result.status, result.next_state) == ("SUCCEEDED", "Done")
    assert result.output == {"id": 3, "resized": {"px": 64}}
    assert result.inspection["after_result_selector"] == {"px": 64}
    assert not (root / "RAN").exists()


def test_mockResultOnAMapState_refused() -> None:
    """A mocked result belongs to a Task: a Map is refused, naming what to do instead."""
    with pytest.raises(StateTestError, match="'PriceItems' is a Map state: a mocked result"):
        test_state(ORDERS, "PriceItems", ORDER, mock_result=[])


def test_bothMocks_refused() -> None:
    """mock_result and mock_error exclude each other."""
    with pytest.raises(StateTestError, match="not both"):
        test_state(ORDERS, "Validate", ORDER, mock_result=1, mock_error=("E", "c"))


def test_nativeWorkflow_refused() -> None:
    """A native workflow has no ASL states: a clear refusal."""
    with pytest.raises(StateTestError, match="native format"):
        test_state(EXAMPLES / "hello", "greet", {})


# -- the CLI ----------------------------------------------------------------------------------


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner(mix_stderr=False).invoke(cli, ["test-state", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.timeout(30)
def test_cli_json_printsTheResultDocumentExit0() -> None:
    """--json prints one document: status, output, next state, inspection."""
    code, out, err = invoke(
        str(ORDERS), "Summarize", "--input", json.dumps({**ORDER, "lines": [1]}), "--json"
    )
    assert code == 0, err
    document = json.loads(out)
    assert document["status"] == "SUCCEEDED" and document["next_state"] == "Fulfil"
    assert document["inspection"]["after_parameters"] == {
        "title": "Order A-1 for ada",
        "count": 1,
        "tags": ["web", "ada"],
    }
    assert list(document["inspection"]) == [
        "input",
        "after_input_path",
        "after_parameters",
        "after_result_path",
        "output",
    ]


@pytest.mark.timeout(30)
def test_cli_table_caughtErrorExit0() -> None:
    """Without --json: the status, next state, error and one row per step."""
    code, out, err = invoke(
        str(ORDERS), "Validate", "--input", "{}", "--mock-error", "InvalidOrder",
        "--mock-cause", "empty",
    )  # fmt: skip
    assert code == 0, err
    assert out.splitlines()[0] == "CAUGHT_ERROR  state Validate  next Rejected"
    assert "InvalidOrder: empty" in out
    assert "after InputPath" in out


@pytest.mark.timeout(30)
def test_cli_failState_exit1() -> None:
    """A FAILED state exits 1."""
    failure = {"error": {"Error": "E", "Cause": "c"}}
    code, out, _ = invoke(str(ORDERS), "Rejected", "--input", json.dumps(failure), "--json")
    assert code == 1
    assert json.loads(out)["error"] == "E"


@pytest.mark.timeout(30)
def test_cli_retriable_exit0() -> None:
    """RETRIABLE exits 0; --mock-error drives it."""
    code, out, _ = invoke(
        str(ORDERS), "PriceItem", "--mock-error", "PriceServiceBusy", "--json",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out)["status"] == "RETRIABLE"


def test_cli_unknownState_exit2ListsStates() -> None:
    """An unknown state: exit 2 and the workflow's states."""
    code, out, err = invoke(str(ORDERS), "Validat")
    assert code == 2 and out == ""
    assert "no state 'Validat' (its states: Charge, Confirm" in err
    assert "did you mean 'Validate'?" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mock-result", "1", "--mock-error", "E"], "not both"),
        (["--mock-cause", "c"], "--mock-cause needs --mock-error"),
        (["--mock-result", "{x"], "not valid JSON"),
        (["--variables", "[1]"], "must be a JSON object"),
        (["--case", "C"], "--case needs --mocks"),
    ],
)
def test_cli_badUsage_exit2(args: list[str], message: str) -> None:
    """Conflicting or malformed options are usage errors (exit 2) naming the option."""
    code, _, err = invoke(str(ORDERS), "Validate", *args)
    assert code == 2
    assert message in err


def test_cli_nativeWorkflow_exit2() -> None:
    """A native workflow is refused with exit 2."""
    code, _, err = invoke(str(EXAMPLES / "hello"), "greet")
    assert code == 2
    assert "native format" in err


@pytest.mark.timeout(30)
def test_cli_jsonataState_variablesInAndOut() -> None:
    """--variables are visible to a JSONata Task's Arguments; the inspection shows the
    arguments, the mocked result, the output and every variable after its Assign."""
    code, out, err = invoke(
        str(EXAMPLES / "jsonata-quote"), "Reserve",
        "--variables", json.dumps({"quoteId": "Q-1", "lines": [{"sku": "apple"}]}),
        "--mock-result", json.dumps({"reservation": "R-1"}), "--json",
    )  # fmt: skip
    assert code == 0, err
    document = json.loads(out)
    assert (document["status"], document["next_state"]) == ("SUCCEEDED", "Quote")
    assert document["inspection"] == {
        "input": {},
        "after_arguments": {"quote_id": "Q-1", "skus": ["apple"]},
        "result": {"reservation": "R-1"},
        "output": {"reservation": "R-1"},
        "variables": {"quoteId": "Q-1", "lines": [{"sku": "apple"}], "reservation": "R-1"},
    }
