"""Callback tasks on the real stack (decision 0033): a task whose Resource ends in
.waitForTaskToken waits, holding no process, until its task token comes back through the
gateway — success, failure or heartbeats — or its timeouts end it; a token works once, for
its app's owner only, and an answer may arrive before the wait is even registered."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from sand.client import SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

from .public_api import PublicApi
from .tenants import make_tenant

pytestmark = pytest.mark.integration

APP = Path(__file__).resolve().parent / "apps" / "callbacks"


class Api(PublicApi):
    """The callbacks app's executions, and the answers to their tasks."""

    def start(self, body: dict[str, Any]) -> str:
        return self.start_async(body)

    def token(self, execution_id: str, timeout_s: float = 30) -> str:
        """The task token the grain printed for ``execution_id``."""
        give_up = time.monotonic() + timeout_s
        while time.monotonic() < give_up:
            logs = self.call("GET", "/v1/apps/callbacks/logs", params={"tail": 2000}).json()
            found = re.findall(rf"token=(\S+) execution={execution_id}", logs["logs"])
            if found:
                return str(found[-1])
            time.sleep(0.2)
        raise AssertionError(f"no task token printed for {execution_id}")

    def answer(self, token: str, what: str, body: Any = None) -> requests.Response:
        return self.call("POST", f"/v1/tasks/{token}/{what}", json=body)


@pytest.fixture(scope="module")
def api(cluster: Supervisor, cluster_config: ClusterConfig) -> Iterator[Api]:
    token = admin_token(cluster_config)
    client = SandClient(cluster_config.gateway_url, token=token, timeout_s=120)
    client.deploy(APP, backend="process")
    try:
        yield Api(cluster_config.gateway_url, token, "callbacks")
    finally:
        client.undeploy("callbacks")


def body(**kw: Any) -> dict[str, Any]:
    return {"sleep_s": 0, "timeout_s": 120, "heartbeat_s": 60, **kw}


def test_success_continuesTheExecution_withTheOutputSent_once(api: Api) -> None:
    execution_id = api.start(body())
    token = api.token(execution_id)
    time.sleep(1.5)
    assert api.status(execution_id)["status"] == "RUNNING", "it waits for the answer"
    sent = api.answer(token, "success", {"output": {"approved": True}})
    assert sent.status_code == 200, sent.text
    assert sent.json()["status"] == "SUCCEEDED"
    done = api.wait(execution_id, 20)
    assert done["status"] == "SUCCEEDED", done
    assert done["output"]["done"]["answer"] == {"approved": True}
    again = api.answer(token, "success", {"output": {"approved": False}})
    assert again.status_code == 409 and "SUCCEEDED" in again.json()["error"], again.text
    failure = api.answer(token, "failure", {"error": "Late"})
    assert failure.status_code == 409, failure.text


def test_failure_failsTheTask_withTheErrorSent(api: Api) -> None:
    execution_id = api.start(body())
    token = api.token(execution_id)
    sent = api.answer(token, "failure", {"error": "Rejected", "cause": "too expensive"})
    assert sent.status_code == 200, sent.text
    done = api.wait(execution_id, 20)
    assert (done["status"], done["error"], done["cause"]) == ("FAILED", "Rejected", "too expensive")


def test_anAnswerBeforeTheWaitIsRegistered_isKept(api: Api) -> None:
    """The grain still runs (sleeps 3 s) when the answer comes: the wait is registered only
    once it returns, and then ends at once with that answer."""
    execution_id = api.start(body(sleep_s=3))
    token = api.token(execution_id)
    sent = api.answer(token, "success", {"output": "early"})
    assert sent.status_code == 200, sent.text
    done = api.wait(execution_id, 20)
    assert done["status"] == "SUCCEEDED" and done["output"]["done"]["answer"] == "early", done


def test_heartbeats_keepItWaiting_withoutThemItTimesOut(api: Api) -> None:
    kept = api.start(body(heartbeat_s=2, timeout_s=60))
    lapsed = api.start(body(heartbeat_s=2, timeout_s=60))
    token = api.token(kept)
    api.token(lapsed)
    for _ in range(5):  # 5 s of heartbeats, more than twice the heartbeat's 2 s
        beat = api.answer(token, "heartbeat")
        assert beat.status_code == 200, beat.text
        time.sleep(1)
    late = api.wait(lapsed, 20)
    assert late["status"] == "SUCCEEDED", late  # caught: the Late state
    assert late["output"]["Error"] == "States.HeartbeatTimeout", late
    assert api.status(kept)["status"] == "RUNNING"
    assert api.answer(token, "success", {"output": 1}).status_code == 200
    assert api.wait(kept, 20)["status"] == "SUCCEEDED"


def test_timeoutSeconds_endsTheWait_andALateAnswerIsRefused(api: Api) -> None:
    execution_id = api.start(body(timeout_s=3, heartbeat_s=2))
    token = api.token(execution_id)
    assert api.answer(token, "heartbeat").status_code == 200
    time.sleep(1.5)
    assert api.answer(token, "heartbeat").status_code == 200
    done = api.wait(execution_id, 20)
    assert done["output"]["Error"] == "States.Timeout", done
    late = api.answer(token, "success", {"output": 1})
    # the execution went on (Catch) and ended: its status says so first
    assert late.status_code == 409, late.text
    assert f"execution '{execution_id}' already ended (SUCCEEDED)" in late.json()["error"]


def test_tokens_areTheOwnersOnly_andCannotBeMadeUp(api: Api, cluster_config: ClusterConfig) -> None:
    execution_id = api.start(body())
    token = api.token(execution_id)
    admin = SandClient(cluster_config.gateway_url, token=admin_token(cluster_config), timeout_s=60)
    stranger = make_tenant(admin, cluster_config, "cb")
    other = Api(cluster_config.gateway_url, stranger.token, "callbacks")
    refused = other.answer(token, "success", {"output": "mine"})
    assert refused.status_code == 403, refused.text
    payload, mac = token.split(".")
    forged = f"{payload}.{mac[:-2]}{'A' if mac[-2] != 'A' else 'B'}{mac[-1]}"
    assert api.answer(forged, "success", {"output": 1}).status_code == 400
    assert api.answer("not-a-token", "success", {"output": 1}).status_code == 400
    no_output = api.answer(token, "success", {"result": 1})
    assert no_output.status_code == 400 and "output" in no_output.json()["error"]
    anonymous = requests.post(
        f"{cluster_config.gateway_url}/v1/tasks/{token}/success", json={"output": 1}, timeout=30
    )
    assert anonymous.status_code == 401
    # none of that touched the wait: the owner's answer still works
    assert api.answer(token, "success", {"output": "ok"}).status_code == 200
    assert api.wait(execution_id, 20)["status"] == "SUCCEEDED"


def test_anAnswerToAStoppedExecution_isRefused_withItsStatus(api: Api) -> None:
    execution_id = api.start(body())
    token = api.token(execution_id)
    stopped = api.call("POST", f"/v1/executions/{execution_id}/stop")
    assert stopped.status_code == 200, stopped.text
    refused = api.answer(token, "success", {"output": 1})
    assert refused.status_code == 409 and "ABORTED" in refused.json()["error"], refused.text
    assert api.status(execution_id)["status"] == "ABORTED"
