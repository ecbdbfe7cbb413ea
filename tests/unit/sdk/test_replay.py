"""``sand replay``: a recorded execution runs here with every grain answered as recorded,
except the grains named to run here, and the first place the local run parts from the
recorded one is found. The "recorded" histories come from the emulator, which records the
cluster's events in the cluster's shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sand.cli import cli
from sand.emulator import EmulationResult, emulate
from sand.replay import Recording, ReplayError, replay

from .conftest import EXAMPLES, AppFactory, Seeded

APP = """\
name: shop
grains:
  price: grains/price.py
  total: grains/total.py
workflows:
  main: workflows/main.json
"""
WORKFLOW = {
    "StartAt": "Prices",
    "States": {
        "Prices": {
            "Type": "Map",
            "ItemsPath": "$.items",
            "ItemProcessor": {
                "StartAt": "Price",
                "States": {
                    "Price": {
                        "Type": "Task",
                        "Resource": "price",
                        "Retry": [{"ErrorEquals": ["Busy"], "IntervalSeconds": 1}],
                        "End": True,
                    }
                },
            },
            "ResultPath": "$.prices",
            "Next": "Total",
        },
        "Total": {"Type": "Task", "Resource": "total", "End": True},
    },
}
# Each run writes a line to ran.log beside the app: what really ran, here or "on the cluster".
PRICE = """\
import pathlib

def handle(event, context):
    log = pathlib.Path(__file__).resolve().parents[1] / "ran.log"
    with log.open("a") as f:
        f.write(f"price {event['sku']}\\n")
    if event["sku"] == "b":
        raise ValueError("no price for b")
    return {"sku": event["sku"], "cents": 100}
"""
TOTAL = """\
import pathlib

def handle(event, context):
    log = pathlib.Path(__file__).resolve().parents[1] / "ran.log"
    with log.open("a") as f:
        f.write("total\\n")
    return {"total": sum(p["cents"] for p in event["prices"])}
"""
FIXED_PRICE = PRICE.replace('raise ValueError("no price for b")', 'return {"sku": "b", "cents": 5}')


@pytest.fixture
def shop(make_app: AppFactory) -> Path:
    return make_app(
        APP,
        {
            "workflows/main.json": json.dumps(WORKFLOW),
            "grains/price.py": PRICE,
            "grains/total.py": TOTAL,
        },
    )


def record(app: Path, payload: Any) -> Recording:
    """The recording of one run of ``app`` (the emulator's history is the cluster's shape)."""
    result = emulate(app, payload, skip_waits=True)
    return recording_of(result)


def recording_of(result: EmulationResult, *, truncated: bool = False) -> Recording:
    document = {"execution_id": result.execution_id, "app": "shop", "workflow": "main"}
    return Recording.of(document, [dict(e) for e in result.steps], truncated=truncated)


def ran(app: Path) -> list[str]:
    log = app / "ran.log"
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


@pytest.mark.timeout(60)
def test_replay_ofTheSameCode_runsNoGrain_andFindsNoDifference(shop: Path) -> None:
    recording = record(shop, {"items": [{"sku": "a"}, {"sku": "c"}]})
    assert sorted(ran(shop)) == ["price a", "price c", "total"]
    result = replay(shop, recording)
    assert ran(shop) == [], "every grain was answered as recorded"
    assert result.difference is None and result.compared > 10
    assert result.local.output == {"total": 200}
    assert result.ran_here == ()


@pytest.mark.timeout(60)
def test_replay_withAFixedGrainRunHere_saysWhereItFirstDiffers(shop: Path) -> None:
    recording = record(shop, {"items": [{"sku": "a"}, {"sku": "b"}]})
    assert recording.ended() is not None and recording.ended()["error"] == "ValueError"
    ran(shop)
    (shop / "grains/price.py").write_text(FIXED_PRICE)
    result = replay(shop, recording, grains=["price"])
    # price runs here; so does total, which the cluster never reached (nothing to answer)
    assert sorted(ran(shop)) == ["price a", "price b", "total"]
    assert result.local.output == {"total": 105}
    difference = result.difference
    assert difference is not None
    assert (difference.path, difference.state) == ("Prices[1]", "Price")
    assert difference.recorded is not None and difference.recorded["type"] == "TaskFailed"
    assert difference.local is not None and difference.local["output"] == {"sku": "b", "cents": 5}
    assert "first difference at Prices[1]/Price" in difference.describe()
    assert any("Total" in line and "not on record" in line for line in result.ran_here)


@pytest.mark.timeout(60)
def test_replay_withoutTheFix_answersTheRecordedError_noGrainRuns(shop: Path) -> None:
    recording = record(shop, {"items": [{"sku": "b"}]})
    ran(shop)
    (shop / "grains/price.py").write_text(FIXED_PRICE)  # not named: the record answers
    result = replay(shop, recording)
    assert ran(shop) == []
    assert (result.local.error, result.local.cause) == ("ValueError", "no price for b")
    assert result.difference is None


@pytest.mark.timeout(60)
def test_replay_fromAState_startsWithItsRecordedInput(shop: Path) -> None:
    recording = record(shop, {"items": [{"sku": "a"}]})
    ran(shop)
    result = replay(shop, recording, from_state="Total", grains=["total"])
    assert ran(shop) == ["total"], "only Total: the states before it did not run again"
    assert result.local.output == {"total": 100}
    assert result.difference is None
    with pytest.raises(ReplayError, match="not a top-level state.*did you mean 'Prices'"):
        replay(shop, recording, from_state="Price")


@pytest.mark.timeout(60)
def test_aTaskThatNeverEnded_runsHere(shop: Path) -> None:
    """A stopped execution: its last task has no recorded end; that call runs here."""
    full = emulate(shop, {"items": [{"sku": "a"}]}, skip_waits=True)
    ran(shop)
    cut = [dict(e) for e in full.steps]
    last = max(i for i, e in enumerate(cut) if e["type"] == "TaskSucceeded")
    stopped = [e for i, e in enumerate(cut) if i < last and e["type"] != "ExecutionSucceeded"]
    document = {"execution_id": full.execution_id, "app": "shop", "workflow": "main"}
    result = replay(shop, Recording.of(document, stopped, truncated=False))
    assert ran(shop) == ["total"]
    assert any("Total call 1" in line and "never ended" in line for line in result.ran_here)


def test_refusals_nameWhatIsMissing(shop: Path) -> None:
    document = {"execution_id": "e1", "app": "shop", "workflow": "main"}
    with pytest.raises(ReplayError, match="truncated at its cap"):
        Recording.of(document, [], truncated=True)
    with pytest.raises(ReplayError, match="no recorded ExecutionStarted"):
        Recording.of(document, [], truncated=False)
    big = {"truncated": True, "bytes": 90000, "preview": "{"}
    started = {"type": "ExecutionStarted", "state": None, "path": "", "input": big}
    with pytest.raises(ReplayError, match="execution's input was recorded truncated"):
        Recording.of(document, [started], truncated=False)
    events = [
        {**started, "input": {}, "workflow": "main"},
        {"type": "TaskScheduled", "state": "Total", "path": "", "input": {}},
        {"type": "TaskSucceeded", "state": "Total", "path": "", "output": big},
    ]
    recording = Recording.of(document, events, truncated=False)
    with pytest.raises(ReplayError, match="result of Total was recorded truncated.*--grain total"):
        replay(shop, recording)
    other = Recording.of({**document, "app": "else"}, events, truncated=False)
    with pytest.raises(ReplayError, match="execution is of app 'else'"):
        replay(shop, other)
    with pytest.raises(ReplayError, match="--grain prise: the app has no such grain"):
        replay(shop, Recording.of(document, events[:1], truncated=False), grains=["prise"])


# -- the command, against the identity twin ------------------------------------------------------


@pytest.mark.usefixtures("isolated")
@pytest.mark.timeout(60)
def test_replayCommand_fetchesTheHistory_printsTheFirstDifference_exit1(
    shop: Path, seeded: Seeded
) -> None:
    recorded = emulate(shop, {"items": [{"sku": "b"}]}, skip_waits=True)
    ran(shop)
    store = seeded.sand.store.executions
    execution_id = store.add(
        {"app": "shop", "status": "FAILED", "error": "ValueError", "cause": "no price for b"},
        [dict(e) for e in recorded.steps],
    )
    env = {"SAND_TOKEN": seeded.sand.store.issue("ada"), "SAND_URL": seeded.sand.gateway_url}

    def sand(*args: str) -> Result:
        return CliRunner(mix_stderr=False).invoke(cli, ["replay", execution_id, *args], env=env)

    same = sand("--app", str(shop))
    assert same.exit_code == 0, same.stderr
    assert "recorded: FAILED ValueError: no price for b" in same.stdout
    assert "no difference" in same.stdout
    assert ran(shop) == []
    (shop / "grains/price.py").write_text(FIXED_PRICE)
    fixed = sand("--app", str(shop), "--grain", "price", "--json")
    assert fixed.exit_code == 1, fixed.stderr
    document = json.loads(fixed.stdout)
    assert document["local_status"] == "SUCCEEDED" and document["local"] == {"total": 5}
    assert (document["difference"]["path"], document["difference"]["state"]) == (
        "Prices[0]",
        "Price",
    )
    assert sorted(ran(shop)) == ["price b", "total"]
    wrong = sand("--app", str(shop), "--from", "Nowhere")
    assert wrong.exit_code == 2 and "--from Nowhere: not a top-level state" in wrong.stderr
    unknown = CliRunner(mix_stderr=False).invoke(cli, ["replay", "f" * 32], env=env)
    assert unknown.exit_code == 2 and "f" * 32 in unknown.stderr


@pytest.mark.timeout(60)
def test_aCallbackTaskWhoseGrainRunsHere_waitsForTheRecordedAnswer() -> None:
    """examples/approval: recorded with the approval answered (a mock stands for the person);
    replayed with its grain run here, the wait ends with the answer sent on the "cluster"."""
    root = EXAMPLES / "approval"
    case = json.loads((root / "mocks-expected.json").read_text())["Approved"]
    recorded = emulate(root, case["input"], mocks=root / "mocks.yaml", case="Approved")
    document = {"execution_id": recorded.execution_id, "app": "approval", "workflow": "main"}
    recording = Recording.of(document, [dict(e) for e in recorded.steps], truncated=False)
    result = replay(root, recording, grains=["request-approval"])
    assert result.local.output == case["result"]
    assert result.difference is None
    submitted = [e for e in result.local.steps if e["type"] == "TaskSubmitted"]
    assert len(submitted) == 1, "the grain ran here and handed out a token"
