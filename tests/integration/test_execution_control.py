"""Stop and redrive on the real stack (decision 0018): a stopped execution's running grain is
killed and nothing after it runs, a synchronous caller is answered ABORTED, a timer loop ends;
a failed execution is redriven from the state that failed, keeping what succeeded."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import requests
from click.testing import CliRunner, Result
from sand.cli import cli
from sand.client import SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

from .public_api import PublicApi

pytestmark = pytest.mark.integration

STEER = Path(__file__).resolve().parent / "apps" / "steer"


class Api(PublicApi):
    """The steer app's executions."""

    def start(self, workflow: str, body: Any) -> str:
        return self.start_async(body, workflow)


@pytest.fixture(scope="module")
def api(cluster: Supervisor, cluster_config: ClusterConfig) -> Iterator[Api]:
    token = admin_token(cluster_config)
    client = SandClient(cluster_config.gateway_url, token=token, timeout_s=120)
    client.deploy(STEER, backend="process")
    try:
        yield Api(cluster_config.gateway_url, token, "steer")
    finally:
        client.undeploy("steer")


def _logs(api: Api) -> str:
    answer = api.call("GET", "/v1/apps/steer/logs", params={"tail": 2000})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["logs"])


def _until(predicate: Any, timeout_s: float = 30) -> None:
    give_up = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < give_up, "condition not met in time"
        time.sleep(0.2)


def test_stop_killsTheRunningGrain_andNothingAfterItRuns(api: Api) -> None:
    execution_id = api.start("main", {"sleep_s": 40})
    _until(lambda: f"slow started execution={execution_id}" in _logs(api))
    stopped = api.call(
        "POST", f"/v1/executions/{execution_id}/stop", json={"cause": "changed my mind"}
    )
    assert stopped.status_code == 200, stopped.text
    doc = stopped.json()
    assert (doc["status"], doc["error"], doc["cause"]) == (
        "ABORTED",
        "States.Aborted",
        "changed my mind",
    )
    assert doc["finished_ms"] >= doc["started_ms"] > 0
    _until(lambda: f"execution={execution_id}" in _logs(api).split("instance killed")[-1])
    time.sleep(2)  # the killed task would have gone on to After by now
    assert f"after ran execution={execution_id}" not in _logs(api)
    assert api.status(execution_id)["status"] == "ABORTED"
    again = api.call("POST", f"/v1/executions/{execution_id}/stop")
    assert again.status_code == 409 and "already ended (ABORTED)" in again.json()["error"]
    # The stopped task was the execution's first, run in the step that started it: that
    # step's history (ExecutionStarted, StateEntered) is recorded all the same, so the
    # stopped execution can be redriven from Slow (it was refused: nothing to resume at).
    _recorded_end(api, execution_id, 1)
    _redrive(api, execution_id, 1)
    _until(lambda: _logs(api).count(f"slow started execution={execution_id}") == 2)
    assert api.call("POST", f"/v1/executions/{execution_id}/stop").status_code == 200
    _recorded_end(api, execution_id, 2)
    _listed_as_shown(api, execution_id)  # ABORTED, redrive 1: the redrive's events arrived


def test_stop_answersTheSynchronousCaller(api: Api) -> None:
    def seen() -> set[str]:
        return set(re.findall(r"slow started execution=([0-9a-f]{32})", _logs(api)))

    before = seen()
    answers: list[requests.Response] = []
    caller = threading.Thread(
        target=lambda: answers.append(
            api.call("POST", "/v1/apps/steer/invoke", params={"workflow": "main"}, json={})
        )
    )
    caller.start()
    fresh: set[str] = set()

    def started() -> bool:
        fresh.update(seen() - before)
        return bool(fresh)

    _until(started)
    execution_id = fresh.pop()
    assert api.call("POST", f"/v1/executions/{execution_id}/stop").status_code == 200
    caller.join(timeout=30)
    assert answers, "the synchronous caller got no answer"
    body = answers[0].json()
    assert (body["execution_id"], body["status"]) == (execution_id, "ABORTED")
    assert body["error"] == "States.Aborted" and body["cause"] == "stopped by admin"


def test_stop_endsATimerLoop(api: Api, cluster_config: ClusterConfig) -> None:
    execution_id = api.start("loop", {})
    time.sleep(2.5)  # a few turns of the loop
    assert api.call("POST", f"/v1/executions/{execution_id}/stop").status_code == 200
    time.sleep(3)  # a turn still under way ends at its next event
    bus = redis.Redis(
        unix_socket_path=str(cluster_config.redis_socket),
        password=cluster_config.redis_password,
    )
    timers = [t for t in bus.zrange("sand:timers", 0, -1) if execution_id.encode() in t]
    assert timers == []
    assert api.status(execution_id)["status"] == "ABORTED"


def test_stop_refusesUnknownAndFinished(api: Api) -> None:
    unknown = api.call("POST", "/v1/executions/" + "0" * 32 + "/stop")
    assert unknown.status_code == 404 and "0" * 32 in unknown.json()["error"]
    done = api.call(
        "POST", "/v1/apps/steer/invoke", params={"workflow": "main"}, json={"sleep_s": 0}
    ).json()
    assert done["status"] == "SUCCEEDED"
    refused = api.call("POST", f"/v1/executions/{done['execution_id']}/stop")
    assert refused.status_code == 409 and "SUCCEEDED" in refused.json()["error"]
    bad = api.call("POST", f"/v1/executions/{done['execution_id']}/stop", json=["no"])
    assert bad.status_code in (400, 409)


def test_redrive_resumesAtTheFailedState_keepingWhatSucceeded(api: Api) -> None:
    execution_id = api.start("redrive", {"order": 7})
    failed = api.wait(execution_id)
    assert (failed["status"], failed["error"]) == ("FAILED", "RuntimeError")
    refused = api.call("POST", "/v1/executions/" + "0" * 32 + "/redrive")
    assert refused.status_code == 404

    def recorded() -> bool:
        answer = api.call("GET", f"/v1/executions/{execution_id}/history")
        return answer.status_code == 200 and any(
            e["type"] == "ExecutionFailed" for e in answer.json()["events"]
        )

    _until(recorded)  # the history is recorded asynchronously
    redriven = api.call("POST", f"/v1/executions/{execution_id}/redrive")
    assert redriven.status_code == 202, redriven.text
    assert (redriven.json()["status"], redriven.json()["redrive_count"]) == ("RUNNING", 1)
    done = api.wait(execution_id)
    assert done["status"] == "SUCCEEDED", done
    assert done["output"]["flaky_runs"] == 2
    # what succeeded before the failure is kept: the state's input had Prepare's and Fan's work
    assert done["output"]["seen"] == {"order": 7, "prep": {"prepared": True}, "fan": ["marked"]}
    logs = _logs(api)
    assert logs.count(f"flaky run 2 execution={execution_id}") == 1

    def history_done() -> list[dict[str, Any]]:
        answer = api.call("GET", f"/v1/executions/{execution_id}/history", params={"limit": 1000})
        return list(answer.json()["events"])

    _until(lambda: any(e["type"] == "ExecutionSucceeded" for e in history_done()))
    events = history_done()
    entered = [e["state"] for e in events if e["type"] == "StateEntered" and e["path"] == ""]
    assert entered == ["Prepare", "Fan", "Flaky", "Flaky", "Done"]
    redrive = next(e for e in events if e["type"] == "ExecutionRedriven")
    assert (redrive["from_state"], redrive["redrive_count"]) == ("Flaky", 1)
    succeeded = api.call("POST", f"/v1/executions/{execution_id}/redrive")
    assert succeeded.status_code == 409 and "SUCCEEDED" in succeeded.json()["error"]


def test_replay_ofAFailedExecution_runsHereAsRecorded(api: Api) -> None:
    """Issue 23: `sand replay` fetches a failed execution's history from the cluster and runs
    the local app on it: answered as recorded (no difference), with the failing grain run here
    (its code is the same: still no difference), and from the failed state on."""
    execution_id = api.start("redrive", {"order": 9})
    assert api.wait(execution_id)["status"] == "FAILED"

    def recorded() -> bool:
        answer = api.call("GET", f"/v1/executions/{execution_id}/history")
        return answer.status_code == 200 and any(
            e["type"] == "ExecutionFailed" for e in answer.json()["events"]
        )

    _until(recorded)
    env = {"SAND_TOKEN": api.bearer, "SAND_URL": api.base}

    def replay(*args: str) -> Result:
        return CliRunner(mix_stderr=False).invoke(
            cli, ["replay", execution_id, "--app", str(STEER), *args], env=env
        )

    same = replay()
    assert same.exit_code == 0, (same.stdout, same.stderr)
    assert "recorded: FAILED RuntimeError: the first run always fails" in same.stdout
    assert "local:    FAILED RuntimeError: the first run always fails" in same.stdout
    assert "no difference" in same.stdout
    here = replay("--grain", "flaky")
    assert here.exit_code == 0, (here.stdout, here.stderr)
    assert "ran here: Flaky (grain 'flaky' runs here, as asked)" in here.stderr
    started = replay("--from", "Flaky", "--grain", "flaky", "--json")
    assert started.exit_code == 0, (started.stdout, started.stderr)
    assert json.loads(started.stdout)["local_status"] == "FAILED"


def test_redrive_restoresTheVariablesOfTheFailedState(api: Api) -> None:
    """A redriven state sees the workflow variables it had when it failed (decision 0020):
    they are recorded with its StateEntered and travel with the redrive."""
    execution_id = api.start("redrive_vars", {"ticket": "T-42"})
    failed = api.wait(execution_id)
    assert failed["status"] == "FAILED", failed

    def events() -> list[dict[str, Any]]:
        answer = api.call("GET", f"/v1/executions/{execution_id}/history")
        return list(answer.json()["events"]) if answer.status_code == 200 else []

    _until(lambda: any(e["type"] == "ExecutionFailed" for e in events()))  # recorded async
    flaky = next(e for e in events() if e["type"] == "StateEntered" and e["state"] == "Flaky")
    assert flaky["variables"] == {"ticket": "T-42", "stage": "prepared"}
    redriven = api.call("POST", f"/v1/executions/{execution_id}/redrive")
    assert redriven.status_code == 202, redriven.text
    done = api.wait(execution_id)
    assert done["status"] == "SUCCEEDED", done
    assert done["output"] == {
        "ticket": "T-42",
        "stage": "prepared",
        "runs": 2,
        "seen": {"ticket": "T-42"},
    }


def _recorded_end(api: Api, execution_id: str, runs: int) -> None:
    """Wait until the history holds the end of the ``runs``-th run (recorded asynchronously)."""

    def ends() -> int:
        answer = api.call("GET", f"/v1/executions/{execution_id}/history", params={"limit": 1000})
        if answer.status_code != 200:
            return 0
        return sum(
            e["type"] in ("ExecutionFailed", "ExecutionAborted", "ExecutionSucceeded")
            for e in answer.json()["events"]
        )

    _until(lambda: ends() >= runs)


def _redrive(api: Api, execution_id: str, count: int) -> None:
    answer = api.call("POST", f"/v1/executions/{execution_id}/redrive")
    assert answer.status_code == 202, answer.text
    assert (answer.json()["status"], answer.json()["redrive_count"]) == ("RUNNING", count)


def _listed_as_shown(api: Api, execution_id: str) -> None:
    """The listing says what the execution's document says, once: one row for the id, with
    the same status and start, and no RUNNING row once it ended."""
    shown = api.status(execution_id)

    def rows(**params: Any) -> list[dict[str, Any]]:
        answer = api.call("GET", "/v1/executions", params={"app": "steer", "limit": 1000, **params})
        assert answer.status_code == 200, answer.text
        return [r for r in answer.json()["executions"] if r["execution_id"] == execution_id]

    def agree() -> bool:
        listed = rows()
        return (
            len(listed) == 1
            and listed[0]["status"] == shown["status"]
            and listed[0].get("redrive_count", 0) == shown.get("redrive_count", 0)
        )

    try:
        _until(agree)  # the listing is written by the recorder, off the path
    except AssertionError:
        raise AssertionError(f"listed {rows()}, shown {shown}") from None
    assert rows()[0]["started_ms"] == shown["started_ms"], (rows(), shown)
    if shown["status"] != "RUNNING":
        assert rows(status="RUNNING") == []


def test_redrive_ofAMapFailure_twice_withARedeployBetween_endsEachTime(
    api: Api, cluster_config: ClusterConfig
) -> None:
    """Issue 24: a second redrive of an execution that failed inside a Map stayed RUNNING for
    ever (it reused the Map run of the first redrive, closed by then). Each redrive ends, the
    listing agrees with the document after each, and a succeeded one is not redriven."""
    # b's first run fails after a and c have ended: a Map item still running when another
    # failed the Map is cancelled, and runs again in a redrive (as in Step Functions)
    b = {"sku": "b", "fail_runs": 2, "sleep_on_run": 1, "sleep_s": 3}
    items = [{"sku": "a"}, b, {"sku": "c"}]
    execution_id = api.start("redrive_map", {"items": items})
    first = api.wait(execution_id)
    assert (first["status"], first["error"]) == ("FAILED", "ValueError"), first
    # issue 24: context.logger.info reaches the logs, and every line of the grain's traceback
    # carries the same tags as its prints and log records, the Map item's path among them
    tag = f"execution_id={execution_id} grain=price path=PriceItems[1] "
    _until(lambda: tag + "ValueError: no price for b (run 1)" in _logs(api))
    lines = _logs(api).splitlines()
    assert any(line.endswith(tag + "level=INFO price b run 1") for line in lines), lines[-40:]
    start = next(i for i, line in enumerate(lines) if tag + "Traceback (most" in line)
    end = next(i for i, line in enumerate(lines) if tag + "ValueError: no price for b" in line)
    assert start < end and all(tag in line for line in lines[start : end + 1]), lines[start:]
    _recorded_end(api, execution_id, 1)
    _listed_as_shown(api, execution_id)
    # a redeploy between (what a user does to fix a grain) leaves the record redrivable
    SandClient(cluster_config.gateway_url, token=admin_token(cluster_config), timeout_s=120).deploy(
        STEER, backend="process"
    )
    _redrive(api, execution_id, 1)
    again = api.wait(execution_id)
    assert (again["status"], again["error"], again["redrive_count"]) == ("FAILED", "ValueError", 1)
    assert "run 2" in again["cause"], again
    _recorded_end(api, execution_id, 2)
    _listed_as_shown(api, execution_id)
    _redrive(api, execution_id, 2)
    done = api.wait(execution_id)
    assert (done["status"], done["redrive_count"]) == ("SUCCEEDED", 2), done
    assert done["started_ms"] == first["started_ms"]
    # only the item that failed runs again in a redrive; the others keep their first run's
    # outputs, as Step Functions' RedriveExecution (their grain ran once)
    assert [(item["sku"], item["runs"]) for item in done["output"]] == [
        ("a", 1),
        ("b", 3),
        ("c", 1),
    ]
    _recorded_end(api, execution_id, 3)
    history = api.call("GET", f"/v1/executions/{execution_id}/history", params={"limit": 1000})
    kept = [e.get("kept") for e in history.json()["events"] if e["type"] == "MapStarted"]
    assert kept == [None, [0, 2], [0, 2]], kept
    _listed_as_shown(api, execution_id)
    refused = api.call("POST", f"/v1/executions/{execution_id}/redrive")
    assert refused.status_code == 409 and "SUCCEEDED" in refused.json()["error"]


def test_redrive_ofAParallelFailure_threeTimes_withAStopBetween_endsEachTime(api: Api) -> None:
    """A Parallel's branch fails; the first redrive fails again, the second is stopped in the
    middle (ABORTED), the third succeeds: every redrive ends and is listed as it ended."""
    second = {"sku": "s", "fail_runs": 2, "sleep_on_run": 3, "sleep_s": 30}
    execution_id = api.start("redrive_parallel", {"first": {"sku": "f"}, "second": second})
    first = api.wait(execution_id)
    assert first["status"] == "FAILED"
    _recorded_end(api, execution_id, 1)
    _redrive(api, execution_id, 1)
    again = api.wait(execution_id)
    assert (again["status"], again["redrive_count"]) == ("FAILED", 1), again
    _recorded_end(api, execution_id, 2)
    _listed_as_shown(api, execution_id)
    # the second redrive: branch "second" sleeps in its run 3, and is stopped meanwhile
    answer = api.call("POST", f"/v1/executions/{execution_id}/redrive")
    assert answer.status_code == 202, answer.text
    _until(lambda: "price s run 3" in _logs(api))
    stopped = api.call("POST", f"/v1/executions/{execution_id}/stop")
    assert stopped.status_code == 200, stopped.text
    aborted = api.wait(execution_id)
    assert (aborted["status"], aborted["redrive_count"]) == ("ABORTED", 2), aborted
    # every run is of the one execution: its start stays the first run's (a stop of a redrive
    # once recorded the redrive's time, and the listing then held the id twice)
    assert aborted["started_ms"] == first["started_ms"], (aborted, first)
    _recorded_end(api, execution_id, 3)
    _listed_as_shown(api, execution_id)
    _redrive(api, execution_id, 3)
    done = api.wait(execution_id)
    assert (done["status"], done["redrive_count"]) == ("SUCCEEDED", 3), done
    assert done["started_ms"] == first["started_ms"]
    # the branch that succeeded in the first run kept its output through every redrive
    assert [(branch["sku"], branch["runs"]) for branch in done["output"]] == [("f", 1), ("s", 4)]
    _listed_as_shown(api, execution_id)


# Fields that say where and when an event happened, not what: they differ between runs.
_RUNTIME_FIELDS = {"at_ms", "host", "pid", "attempt", "duration_ms", "execution_id"}


def _shape(events: list[dict[str, Any]]) -> list[tuple[str, str | None, str, tuple[str, ...]]]:
    """Each event as (type, state, path, its keys but the run-time ones), sorted: the branches
    of a Parallel and the items of a Map interleave differently from run to run."""
    return sorted(
        (e["type"], e["state"], e["path"], tuple(sorted(set(e) - _RUNTIME_FIELDS))) for e in events
    )


def test_history_everyStateType_sameEventsAsTheEmulator(api: Api) -> None:
    from sand.emulator import emulate

    emulated = emulate(STEER, {"x": 1}, "tour", skip_waits=True)
    assert emulated.ok, emulated.cause
    execution_id = api.start("tour", {"x": 1})
    assert api.wait(execution_id)["status"] == "SUCCEEDED"

    def recorded() -> list[dict[str, Any]]:
        answer = api.call("GET", f"/v1/executions/{execution_id}/history", params={"limit": 1000})
        assert answer.status_code == 200, answer.text
        return list(answer.json()["events"])

    _until(lambda: any(e["type"] == "ExecutionSucceeded" for e in recorded()))
    events = recorded()
    assert _shape(events) == _shape(list(emulated.steps))
    types = {e["type"] for e in events}
    for kind in (
        "ExecutionStarted", "StateEntered", "StateExited", "TaskScheduled", "TaskStarted",
        "TaskSucceeded", "TaskFailed", "RetryScheduled", "Caught", "WaitStarted", "WaitEnded",
        "ParallelStarted", "MapStarted", "BranchSucceeded", "ExecutionSucceeded",
    ):  # fmt: skip
        assert kind in types, kind
    started = [e for e in events if e["type"] == "TaskStarted"]
    assert all(e["host"] == "host-1" and isinstance(e["pid"], int) for e in started)
    output = next(e for e in events if e["type"] == "ExecutionSucceeded")["output"]
    assert output == emulated.output
