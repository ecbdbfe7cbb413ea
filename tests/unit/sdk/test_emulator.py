"""The emulator: examples end as expected.json says; grains really run in parallel, waits
really wait, retries really retry, and no grain process outlives an emulation."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from sand.app import AppError
from sand.data.memory import MemoryDataServer
from sand.emulator import EmulationError, emulate

from .conftest import EXAMPLES, AppFactory

EXAMPLE_CASES = [
    (root.name, workflow, case)
    for root in sorted(EXAMPLES.iterdir())
    if (root / "expected.json").exists()
    for workflow, case in json.loads((root / "expected.json").read_text()).items()
]


def no_children_left() -> bool:
    return psutil.Process().children(recursive=True) == []


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("example", "workflow", "case"), EXAMPLE_CASES, ids=[f"{e}/{w}" for e, w, _ in EXAMPLE_CASES]
)
def test_example_matchesExpectedJson(example: str, workflow: str, case: dict[str, Any]) -> None:
    """Each example's workflow turns expected.json's input into its output."""
    result = emulate(EXAMPLES / example, case["input"], workflow, skip_waits=True)
    assert result.ok, f"{result.error}: {result.cause}"
    assert result.output == case["output"]
    assert no_children_left()


def test_examples_coverEveryExample() -> None:
    """All five examples exist and carry an expected.json."""
    assert {e for e, _, _ in EXAMPLE_CASES} >= {
        "hello",
        "fanout",
        "image-pipeline",
        "asl-orders",
        "jsonata-quote",
    }


@pytest.mark.timeout(30)
def test_imagePipeline_storesThumbnailInDataLayer() -> None:
    """The thumbnail grain's PNG and metadata land in the (kept) data layer."""
    case = json.loads((EXAMPLES / "image-pipeline/expected.json").read_text())["main"]
    with MemoryDataServer() as data:
        result = emulate(EXAMPLES / "image-pipeline", case["input"], data=data)
        assert result.ok
        stored = data.snapshot("image-pipeline", "local")
    assert stored["thumbnails/sample.png"][1:9] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(stored["metadata/sample.json"][1:])["tags"] == case["output"]["tags"]
    assert not [k for k in stored if k.startswith("images/")]  # the scratch image was deleted


@pytest.mark.timeout(30)
def test_imagePipeline_badImage_isCaughtAndRejected() -> None:
    """Bytes that are not an image are caught (Catch) and end as a rejected output."""
    result = emulate(EXAMPLES / "image-pipeline", {"name": "x", "image": "aGVsbG8="})
    assert result.output == {"name": "x", "status": "rejected", "error": "UnidentifiedImageError"}


@pytest.mark.timeout(30)
def test_imagePipeline_unsupportedFormat_failsViaChoiceDefault() -> None:
    """A GIF goes to the Choice's Default, a Fail state."""
    import base64
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buffer, format="GIF")
    event = {"name": "g", "image": base64.b64encode(buffer.getvalue()).decode()}
    result = emulate(EXAMPLES / "image-pipeline", event)
    assert not result.ok
    assert (result.error, result.cause) == (
        "UnsupportedFormat",
        "only PNG and JPEG images are accepted",
    )
    assert result.to_json() == {"Error": result.error, "Cause": result.cause}


@pytest.mark.timeout(30)
def test_aslOrders_retryIsReal_andTraceRecordsEveryStep() -> None:
    """The fig line fails once and is retried; the trace shows the failure, the wait, the retry."""
    case = json.loads((EXAMPLES / "asl-orders/expected.json").read_text())["main"]
    seen: list[dict[str, Any]] = []
    result = emulate(EXAMPLES / "asl-orders", case["input"], skip_waits=True, trace=seen.append)
    assert result.ok
    assert seen == list(result.steps)
    scheduled = {
        (e["path"], e["state"])
        for e in seen
        if e["type"] == "TaskScheduled" and e["input"].get("sku") == "fig"
    }
    assert len(scheduled) == 1
    fig_path, fig_state = scheduled.pop()
    assert fig_state == "PriceItem"
    ends = [
        e for e in seen if e["type"] in ("TaskSucceeded", "TaskFailed") and e["path"] == fig_path
    ]
    assert [e.get("error") for e in ends] == ["PriceServiceBusy", None]
    assert ends[1]["output"]["attempts"] == 2
    assert all(isinstance(e["duration_ms"], int) for e in ends)
    started = [e for e in seen if e["type"] == "TaskStarted" and e["path"] == fig_path]
    assert [e["grain"] for e in started] == ["price-item", "price-item"]
    assert all(isinstance(e["pid"], int) for e in started)
    retries = [e for e in seen if e["type"] == "RetryScheduled"]
    assert [(e["state"], e["delay_s"]) for e in retries] == [("PriceItem", 1)]
    waits = [e for e in seen if e["type"] == "WaitStarted"]
    assert len(waits) == 1 and any(e["type"] == "WaitEnded" for e in seen)
    # every state type of the workflow shows up, Map included
    types = {e["type"] for e in seen}
    assert {"ExecutionStarted", "StateEntered", "StateExited", "MapStarted"} <= types
    assert seen[-1]["type"] == "ExecutionSucceeded" and seen[-1]["output"] == result.output


PARALLEL_APP = """\
name: timing
grains:
  nap: grains/nap.py
workflows:
  main: workflows/main.json
  fan: workflows/fan.yaml
"""
NAP = """\
import time

def handle(event, context):
    time.sleep(event["s"])
    return event["s"]
"""
WAIT_BESIDE_TASK = {
    "StartAt": "Both",
    "States": {
        "Both": {
            "Type": "Parallel",
            "End": True,
            "Branches": [
                {
                    "StartAt": "W",
                    "States": {"W": {"Type": "Wait", "Seconds": 1, "End": True}},
                },
                {
                    "StartAt": "N",
                    "States": {
                        "N": {
                            "Type": "Task",
                            "Resource": "nap",
                            "Parameters": {"s": 0.6},
                            "End": True,
                        }
                    },
                },
            ],
        }
    },
}
MAP_OF_NAPS = """\
StartAt: Naps
States:
  Naps:
    Type: Map
    ItemsPath: $.items
    ItemProcessor:
      StartAt: Nap
      States:
        Nap: {Type: Task, Resource: nap, End: true}
    End: true
"""


@pytest.fixture
def timing_app(make_app: AppFactory) -> Path:
    return make_app(
        PARALLEL_APP,
        {
            "grains/nap.py": NAP,
            "workflows/main.json": json.dumps(WAIT_BESIDE_TASK),
            "workflows/fan.yaml": MAP_OF_NAPS,
        },
    )


@pytest.mark.timeout(20)
def test_wait_isRealAndDoesNotBlockOtherBranches(timing_app: Path) -> None:
    """A 1 s Wait beside a 0.6 s task: both overlap, the whole takes about 1 s, not 1.6 s."""
    started = time.monotonic()
    result = emulate(timing_app, {})
    elapsed = time.monotonic() - started
    assert result.output == [{}, 0.6]
    assert 0.95 <= elapsed < 1.5


@pytest.mark.timeout(20)
def test_skipWaits_firesTimersAtOnce(timing_app: Path) -> None:
    """With skip_waits the Wait takes no time; the task still does."""
    started = time.monotonic()
    assert emulate(timing_app, {}, skip_waits=True).ok
    assert time.monotonic() - started < 0.95


@pytest.mark.timeout(20)
def test_mapItems_runConcurrentlyInForkedProcesses(timing_app: Path) -> None:
    """Four 0.5 s items finish in well under 2 s; max_concurrency=1 serialises them."""
    items = {"items": [{"s": 0.5}] * 4}
    started = time.monotonic()
    assert emulate(timing_app, items, "fan").output == [0.5] * 4
    assert time.monotonic() - started < 1.5
    started = time.monotonic()
    assert emulate(timing_app, {"items": [{"s": 0.2}] * 3}, "fan", max_concurrency=1).ok
    assert time.monotonic() - started >= 0.6


@pytest.mark.timeout(20)
def test_taskTimeout_killsGrainAndFailsWithStatesTimeout(make_app: AppFactory) -> None:
    """TimeoutSeconds is enforced on the forked grain; the app's timeout_s caps it."""
    definition = {
        "StartAt": "N",
        "States": {"N": {"Type": "Task", "Resource": "nap", "TimeoutSeconds": 30, "End": True}},
    }
    root = make_app(
        "name: t\ngrains: {nap: nap.py}\nworkflows: {main: wf.json}\nlimits: {timeout_s: 0.5}\n",
        {"nap.py": NAP, "wf.json": json.dumps(definition)},
    )
    started = time.monotonic()
    result = emulate(root, {"s": 10})
    assert result.error == "States.Timeout"
    assert time.monotonic() - started < 3
    assert no_children_left()


@pytest.mark.timeout(20)
def test_nativeDynamicNext_followsAddNext(make_app: AppFactory) -> None:
    """A native grain with potentialNext picks its successor at run time with add_next."""
    router = (
        "def handle(event, context):\n"
        "    context.add_next('big' if event > 10 else 'small')\n"
        "    return event\n"
    )
    workflow = (
        "entry: route\ngrains:\n  route: {potentialNext: [big, small]}\n  big: {}\n  small: {}\n"
    )
    root = make_app(
        "name: router\ngrains: {route: r.py, big: b.py, small: s.py}\nworkflows: {main: wf.yaml}\n",
        {
            "r.py": router,
            "b.py": "def handle(event, context):\n    return 'big'\n",
            "s.py": "def handle(event, context):\n    return 'small'\n",
            "wf.yaml": workflow,
        },
    )
    assert emulate(root, 50).output == "big"
    assert emulate(root, 5).output == "small"


@pytest.mark.timeout(20)
def test_grainFailure_failsExecutionWithErrorAndCause() -> None:
    """An exception nobody catches fails the execution with its class name and message."""
    result = emulate(EXAMPLES / "hello", {"name": "   "})
    assert not result.ok
    assert (result.error, result.cause) == ("ValueError", "the input needs a non-empty 'name'")


def test_invalidApp_raisesAppError(make_app: AppFactory) -> None:
    """An invalid app is refused before anything runs."""
    with pytest.raises(AppError):
        emulate(make_app("name: x\n"), {})


@pytest.mark.timeout(30)
def test_grainImportFailure_failsOnlyTheWorkflowsUsingIt(make_app: AppFactory) -> None:
    """A grain that fails at import fails the workflow that reaches it with States.Runtime
    naming the grain, its file and the error; a workflow without it runs."""
    root = make_app(
        "name: x\ngrains: {a: a.py, ok: ok.py}\nworkflows: {main: wf.yaml, other: ok.yaml}\n",
        {
            "a.py": "raise RuntimeError('boom')\ndef handle(e, c):\n    return e\n",
            "ok.py": "def handle(e, c):\n    return {'ok': e}\n",
            "wf.yaml": "entry: a\ngrains: {a: {}}\n",
            "ok.yaml": "entry: ok\ngrains: {ok: {}}\n",
        },
    )
    broken = emulate(root, {})
    assert broken.status == "FAILED" and broken.error == "States.Runtime"
    assert broken.cause is not None
    assert re.search(
        r"grain 'a' cannot run: .*a\.py: import failed: RuntimeError: boom", broken.cause
    )
    fine = emulate(root, 1, "other")
    assert fine.ok and fine.output == {"ok": 1}


def test_nonJsonInput_raisesEmulationError() -> None:
    """The input must be a JSON value."""
    with pytest.raises(EmulationError, match="input is not a JSON value"):
        emulate(EXAMPLES / "hello", {"name": {1, 2}})


@pytest.mark.timeout(20)
def test_failureInOneBranch_endsExecutionAndKillsTheOthers(make_app: AppFactory) -> None:
    """When a Parallel branch fails, the execution fails at once; running grains are killed."""
    definition = {
        "StartAt": "Both",
        "States": {
            "Both": {
                "Type": "Parallel",
                "End": True,
                "Branches": [
                    {
                        "StartAt": "Long",
                        "States": {
                            "Long": {
                                "Type": "Task",
                                "Resource": "nap",
                                "Parameters": {"s": 10},
                                "End": True,
                            }
                        },
                    },
                    {
                        "StartAt": "Short",
                        "States": {
                            "Short": {
                                "Type": "Task",
                                "Resource": "nap",
                                "Parameters": {"s": 0.3},
                                "Next": "Boom",
                            },
                            "Boom": {"Type": "Fail", "Error": "Boom", "Cause": "now"},
                        },
                    },
                ],
            }
        },
    }
    root = make_app(
        "name: t\ngrains: {nap: nap.py}\nworkflows: {main: wf.json}\n",
        {"nap.py": NAP, "wf.json": json.dumps(definition)},
    )
    started = time.monotonic()
    result = emulate(root, {})
    assert (result.error, result.cause) == ("Boom", "now")
    assert time.monotonic() - started < 3  # did not wait for the 10 s grain
    ended = [e["state"] for e in result.steps if e["type"] in ("TaskSucceeded", "TaskFailed")]
    assert ended == ["Short"]
    assert no_children_left()
