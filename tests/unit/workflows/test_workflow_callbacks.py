"""Callback tasks (``.waitForTaskToken``, decision 0033) in the engine: the task token in the
context, the wait after the grain, the outcome sent with the token, and the timeouts."""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from sand_workflows import Workflow, WorkflowError, load_workflow_text
from sand_workflows.engine import (
    AwaitCallback,
    Engine,
    Failed,
    Finished,
    InMemoryStore,
    TaskCall,
    TaskTokenMinter,
)
from sand_workflows.task_tokens import KEY_LABEL, app_key
from sand_workflows.tokens import decode_token

NOW = datetime(2026, 1, 1, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)
MINTER = TaskTokenMinter("shop", app_key("cluster-secret", "shop"))


def wf(defn: dict[str, Any]) -> Workflow:
    return load_workflow_text(yaml.safe_dump(defn), source="t.yaml", grains={"ask", "ship"})


def engine(defn: dict[str, Any]) -> Engine:
    return Engine(wf(defn), InMemoryStore(), clock=lambda: NOW, task_tokens=MINTER)


def only(actions: list[Any], kind: type) -> Any:
    assert len(actions) == 1 and isinstance(actions[0], kind), actions
    return actions[0]


def approval(**task: Any) -> dict[str, Any]:
    return {
        "StartAt": "Approve",
        "States": {
            "Approve": {
                "Type": "Task",
                "Resource": "ask.waitForTaskToken",
                "Parameters": {"order.$": "$.order", "token.$": "$$.Task.Token"},
                "Next": "Ship",
                **task,
            },
            "Ship": {"Type": "Task", "Resource": "ship", "End": True},
        },
    }


def test_theGrainGetsTheTaskToken_inItsContextAndInItsParameters() -> None:
    call = only(engine(approval()).start("e1", {"order": 7}), TaskCall)
    token = call.context["Task"]["Token"]
    assert call.grain == "ask"
    assert call.input == {"order": 7, "token": token}
    # the token names app, execution and this entry, under the app's key
    payload_b64, mac_b64 = token.split(".")
    payload = base64.urlsafe_b64decode(payload_b64 + "=" * (-len(payload_b64) % 4))
    assert payload == b"shop\ne1\ne1/Approve#1"
    key = hmac.new(b"cluster-secret", (KEY_LABEL + "shop").encode(), hashlib.sha256).digest()
    expected = hmac.new(key, payload, hashlib.sha256).digest()
    assert base64.urlsafe_b64decode(mac_b64 + "=" * (-len(mac_b64) % 4)) == expected


def test_theGrainReturning_onlySubmitsTheTask_theExecutionWaits() -> None:
    e = engine(approval(TimeoutSeconds=3600, HeartbeatSeconds=600))
    call = only(e.start("e1", {"order": 7}), TaskCall)
    wait = only(e.task_succeeded(call.token, {"sent": True}), AwaitCallback)
    assert wait.task_token == call.context["Task"]["Token"]
    assert (wait.timeout_at_ms, wait.heartbeat_ms) == (NOW_MS + 3_600_000, 600_000)
    # the outcome sent with the token is the task's result: the execution goes on
    ship = only(e.callback_ended(wait.token, {"output": {"approved": True}}), TaskCall)
    assert (ship.grain, ship.input) == ("ship", {"approved": True})
    assert only(e.task_succeeded(ship.token, "done"), Finished).output == "done"


def test_aFailureSent_isTheTasksError_caughtAsUsual() -> None:
    defn = approval(Catch=[{"ErrorEquals": ["Rejected"], "ResultPath": "$.why", "Next": "No"}])
    defn["States"]["No"] = {"Type": "Pass", "End": True}
    e = engine(defn)
    call = only(e.start("e1", {"order": 7}), TaskCall)
    wait = only(e.task_succeeded(call.token, None), AwaitCallback)
    out = only(e.callback_ended(wait.token, {"error": "Rejected", "cause": "no"}), Finished)
    assert out.output == {"order": 7, "why": {"Error": "Rejected", "Cause": "no"}}


@pytest.mark.parametrize("error", ["States.Timeout", "States.HeartbeatTimeout"])
def test_aTimeout_isRetriedLikeAnyError_withANewToken(error: str) -> None:
    defn = approval(Retry=[{"ErrorEquals": [error], "MaxAttempts": 1, "IntervalSeconds": 1}])
    e = engine(defn)
    first = only(e.start("e1", {"order": 7}), TaskCall)
    wait = only(e.task_succeeded(first.token, None), AwaitCallback)
    retry = only(e.callback_ended(wait.token, {"error": error, "cause": "late"}), object)
    again = only(e.timer_fired(retry.token), TaskCall)
    assert again.context["Task"]["Token"] != first.context["Task"]["Token"], (
        "each attempt waits with a token of its own: a late answer to the first is refused"
    )
    wait = only(e.task_succeeded(again.token, None), AwaitCallback)
    failed = only(e.callback_ended(wait.token, {"error": error, "cause": "late"}), Failed)
    assert failed.error == error


def test_theGrainFailing_failsTheTask_noWait() -> None:
    e = engine(approval())
    call = only(e.start("e1", {"order": 7}), TaskCall)
    failed = only(e.task_failed(call.token, "Boom", "bad"), Failed)
    assert failed.error == "Boom"


def test_jsonata_tokenInStatesContext_andTimeoutsFromExpressions() -> None:
    defn = {
        "QueryLanguage": "JSONata",
        "StartAt": "Approve",
        "States": {
            "Approve": {
                "Type": "Task",
                "Resource": "ask.waitForTaskToken",
                "Arguments": {"token": "{% $states.context.Task.Token %}"},
                "TimeoutSeconds": "{% $states.input.t %}",
                "HeartbeatSeconds": "{% $states.input.h %}",
                "Output": "{% $states.result.ok %}",
                "End": True,
            }
        },
    }
    e = engine(defn)
    call = only(e.start("e1", {"t": 100, "h": 10}), TaskCall)
    assert call.input == {"token": call.context["Task"]["Token"]}
    wait = only(e.task_succeeded(call.token, None), AwaitCallback)
    assert (wait.timeout_at_ms, wait.heartbeat_ms) == (NOW_MS + 100_000, 10_000)
    assert only(e.callback_ended(wait.token, {"output": {"ok": 1}}), Finished).output == 1


def test_heartbeatPath_notBelowTimeout_failsTheStateAtRunTime() -> None:
    e = engine(approval(TimeoutSeconds=10, HeartbeatSecondsPath="$.hb"))
    failed = only(e.start("e1", {"order": 7, "hb": 10}), Failed)
    assert failed.error == "States.Runtime" and "HeartbeatSeconds (10)" in failed.cause


def test_eachEntryOfTheState_waitsWithItsOwnToken() -> None:
    defn = {
        "StartAt": "Approve",
        "States": {
            "Approve": {"Type": "Task", "Resource": "ask.waitForTaskToken", "Next": "Again"},
            "Again": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.more", "BooleanEquals": True, "Next": "Approve"}],
                "Default": "Done",
            },
            "Done": {"Type": "Succeed"},
        },
    }
    e = engine(defn)
    first = only(e.start("e1", {}), TaskCall)
    wait = only(e.task_succeeded(first.token, None), AwaitCallback)
    second = only(e.callback_ended(wait.token, {"output": {"more": True}}), TaskCall)
    assert second.context["Task"]["Token"] != first.context["Task"]["Token"]
    assert decode_token(second.token).callback is not None


def test_deploy_refusesOtherIntegrationPatterns_andKnowsTheGrain() -> None:
    with pytest.raises(WorkflowError, match=r"'\.sync' integration pattern is not supported"):
        wf({"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "ask.sync", "End": True}}})
    with pytest.raises(WorkflowError, match="names no grain"):
        wf(
            {
                "StartAt": "T",
                "States": {"T": {"Type": "Task", "Resource": "nope.waitForTaskToken", "End": True}},
            }
        )
    with pytest.raises(WorkflowError, match="HeartbeatSeconds.*smaller than TimeoutSeconds"):
        wf(approval(TimeoutSeconds=10, HeartbeatSeconds=10))


def test_aTaskWithoutTheSuffix_hasNoToken() -> None:
    defn = {"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "ask", "End": True}}}
    call = only(engine(defn).start("e1", {}), TaskCall)
    assert "Task" not in call.context
    assert only(engine(defn).task_succeeded(call.token, 1), Finished).output == 1


def test_minting_matchesTheJavaCheckersKnownVector() -> None:
    """The same vector as dev.sand.contracts.TaskTokensTest (the agent checks what the worker
    mints): key from the cluster's secret, then the token."""
    key = app_key("s3cret-agent-0033", "thumbs")
    assert key.hex() == "190c0ce274d1b3da90ac23db1ccb2de8c0f92601b34f03005ecf95055ac0aef9"
    token = TaskTokenMinter("thumbs", key).mint("exec-1", "exec-1/Approve#3")
    assert token == (
        "dGh1bWJzCmV4ZWMtMQpleGVjLTEvQXBwcm92ZSMz.A7spnT2Q678gaqYCaYw0pumI7xx0f47_gWa7MEzG6ng"
    )
