"""The typed client's callbacks (issue 23) against the twin: a task's success, failure and
heartbeat reach ``POST /v1/tasks/{token}/...`` with the contract's bodies and the token as
one path segment, answer the wait's status, and refusals raise the class of their status
with the server's message (a 409 says the task no longer waits and why)."""

from __future__ import annotations

from typing import Any

import pytest
from sand.client import BadRequest, Busy, Conflict, Forbidden, SandClient

from tests.unit.fake_sand import FakeSand

pytestmark = pytest.mark.timeout(30)

TOKEN = "c2hvcApleGVjLTEKZXhlYy0xL0FwcHJvdmUjMQ.c2lnbmF0dXJl"


@pytest.fixture
def shop(sand: FakeSand) -> FakeSand:
    """The twin with ada's app ``shop`` (admin's ``ops``) and a task of ``shop`` waiting on
    ``TOKEN``."""
    sand.store.executions.add_app("shop", "ada")
    sand.store.executions.add_app("ops", "admin")
    sand.store.tasks.add(TOKEN, "shop")
    return sand


def _as(sand: FakeSand, user: str = "ada") -> SandClient:
    return SandClient(sand.gateway_url, token=sand.store.issue(user), timeout_s=10)


def _last(sand: FakeSand) -> tuple[str, str, Any]:
    sent = sand.store.requests[-1]
    return sent.method, sent.path, sent.body


@pytest.mark.parametrize("output", [{"approved": True}, [1, "two"], "yes", 7, None])
def test_sendTaskSuccess_postsTheOutput_andAnswersSucceeded(shop: FakeSand, output: Any) -> None:
    """Any JSON value is the output, sent as {"output": value}; the answer is the status."""
    assert _as(shop).send_task_success(TOKEN, output) == "SUCCEEDED"
    assert _last(shop) == ("POST", f"/v1/tasks/{TOKEN}/success", {"output": output})
    assert shop.store.tasks.waits[TOKEN].outcome == {"output": output}


def test_sendTaskFailure_sendsErrorAndCause_andOmitsWhatIsNotGiven(shop: FakeSand) -> None:
    """error and cause go in the body when given; neither is required."""
    client = _as(shop)
    assert client.send_task_failure(TOKEN, error="Rejected", cause="no [budget]") == "FAILED"
    assert _last(shop) == (
        "POST",
        f"/v1/tasks/{TOKEN}/failure",
        {"error": "Rejected", "cause": "no [budget]"},
    )
    shop.store.tasks.add("shop.other", "shop")
    assert client.send_task_failure("shop.other", cause="only why") == "FAILED"
    assert _last(shop)[2] == {"cause": "only why"}


def test_sendTaskHeartbeat_answersWaiting(shop: FakeSand) -> None:
    """A heartbeat leaves the task waiting and says so."""
    assert _as(shop).send_task_heartbeat(TOKEN) == "WAITING"
    assert _last(shop)[:2] == ("POST", f"/v1/tasks/{TOKEN}/heartbeat")
    assert shop.store.tasks.waits[TOKEN].beats == 1


def test_theToken_isOnePathSegment(shop: FakeSand) -> None:
    """A token with '/' or '?' cannot reach another route: it is quoted as one segment."""
    shop.store.tasks.add("a/b?c.d", "shop")
    assert _as(shop).send_task_heartbeat("a/b?c.d") == "WAITING"
    assert _last(shop)[1] == "/v1/tasks/a%2Fb%3Fc.d/heartbeat"


def test_aTaskNoLongerWaiting_raisesConflict_withTheServersMessage(shop: FakeSand) -> None:
    """A second answer (or a heartbeat after the end) is a 409 naming the status."""
    client = _as(shop)
    client.send_task_success(TOKEN, {})
    for call in (
        lambda: client.send_task_success(TOKEN, {}),
        lambda: client.send_task_failure(TOKEN, error="Late"),
        lambda: client.send_task_heartbeat(TOKEN),
    ):
        with pytest.raises(Conflict) as refused:
            call()
        assert refused.value.status == 409
        assert refused.value.server_message == "the task is no longer waiting: already SUCCEEDED"
        assert str(refused.value) == ("HTTP 409: the task is no longer waiting: already SUCCEEDED")


def test_aMalformedToken_raisesBadRequest_andAnotherUsersTask_Forbidden(shop: FakeSand) -> None:
    """400 and 403 raise their own classes, with the server's text."""
    with pytest.raises(BadRequest, match="'token': not a task token"):
        _as(shop).send_task_success("nope", {})
    shop.store.tasks.add("ops.token", "ops")
    with pytest.raises(Forbidden, match="the task token is of application 'ops'"):
        _as(shop).send_task_failure("ops.token", error="X")
    assert _as(shop, "admin").send_task_failure("ops.token", error="X") == "FAILED"


def test_aBusyGateway_raisesBusy_withTheSecondsToWait(shop: FakeSand) -> None:
    """A 429 (from a proxy in front) is Busy with its Retry-After, as for every call."""
    shop.store.tasks.busy_retry_s = 3
    with pytest.raises(Busy) as refused:
        _as(shop).send_task_heartbeat(TOKEN)
    assert refused.value.retry_after_s == 3
