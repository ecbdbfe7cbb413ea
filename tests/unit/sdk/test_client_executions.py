"""The typed client against the twin: executions listed page by page, one execution's
document and history, stop, redrive, idempotent starts, and the refusals as the exception
classes of their status carrying the server's message."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sand.client import (
    AppInfo,
    BadRequest,
    ClientError,
    Conflict,
    Execution,
    ExecutionSummary,
    Forbidden,
    GatewayTimeout,
    HistoryEvent,
    NotFound,
    SandApiError,
    SandClient,
    ServerError,
    ServiceUnavailable,
    Unauthorized,
    Unreachable,
    error_class,
)

from tests.unit.fake_sand import FakeSand
from tests.unit.sdk.conftest import Seeded

pytestmark = pytest.mark.timeout(30)


def _as(sand: FakeSand, user: str) -> SandClient:
    return SandClient(sand.gateway_url, token=sand.store.issue(user), timeout_s=10)


def test_executions_areNewestFirst_andOnlyTheCallersApps(seeded: Seeded) -> None:
    """ada sees her app's three executions, newest first; the admin sees all four."""
    page = _as(seeded.sand, "ada").executions()
    assert [r.execution_id for r in page.executions] == [
        seeded.succeeded,
        seeded.running,
        seeded.failed,
    ]
    assert page.next_page is None
    first = page.executions[0]
    assert isinstance(first, ExecutionSummary)
    assert (first.app, first.workflow, first.status, first.name) == (
        "shop",
        "main",
        "SUCCEEDED",
        "order-8",
    )
    assert first.duration_ms == 100
    everyone = _as(seeded.sand, "admin").executions()
    assert seeded.admins in {r.execution_id for r in everyone.executions}


def test_executions_filtersReachTheServer(seeded: Seeded) -> None:
    """app, status, since (ms, RFC 3339 or an aware datetime) and limit are sent as given."""
    ada = _as(seeded.sand, "ada")
    failed = ada.executions(app="shop", status="FAILED")
    assert [r.execution_id for r in failed.executions] == [seeded.failed]
    assert failed.executions[0].error == "ValueError"
    later = ada.executions(since=1_767_225_601_000)
    assert {r.execution_id for r in later.executions} == {seeded.running, seeded.succeeded}
    when = datetime.fromtimestamp(1_767_225_602, UTC)
    assert [r.execution_id for r in ada.executions(since=when).executions] == [seeded.succeeded]
    assert seeded.sand.store.requests[-1].path.endswith("since=2026-01-01T00%3A00%3A02%2B00%3A00")
    with pytest.raises(ValueError, match="since: a datetime needs a time zone"):
        ada.executions(since=datetime(2026, 1, 1))


def test_allExecutions_followsEveryPage(seeded: Seeded) -> None:
    """The iterator asks page after page (limit 1 here) until next_page is null."""
    ada = _as(seeded.sand, "ada")
    first = ada.executions(limit=1)
    assert len(first.executions) == 1 and first.next_page is not None
    listed = [r.execution_id for r in ada.all_executions(limit=1)]
    assert listed == [seeded.succeeded, seeded.running, seeded.failed]
    pages = [r for r in seeded.sand.store.requests if r.path.startswith("/v1/executions?")]
    assert len(pages) == 1 + 3


def test_badListParameters_raiseBadRequest_namingThem(seeded: Seeded) -> None:
    """The server's 400 becomes BadRequest with its message (the parameter and the value)."""
    ada = _as(seeded.sand, "ada")
    with pytest.raises(BadRequest) as bad:
        ada.executions(status="DONE")
    assert bad.value.status == 400
    assert bad.value.server_message == (
        "'status': must be one of RUNNING, SUCCEEDED, FAILED, ABORTED, got 'DONE'"
    )
    assert "HTTP 400: 'status'" in str(bad.value)
    with pytest.raises(BadRequest, match="'limit': must be an integer from 1 to 1000"):
        ada.executions(limit=0)


def test_execution_isTheTypedDocument(seeded: Seeded) -> None:
    """GET /v1/executions/{id}: status, input, error and cause, times."""
    doc = _as(seeded.sand, "ada").execution(seeded.failed)
    assert isinstance(doc, Execution)
    assert (doc.status, doc.error, doc.cause) == (
        "FAILED",
        "ValueError",
        "no address [a-z]+ for order 7",
    )
    assert doc.input == {"order": 7}
    assert doc.finished_ms is not None and doc.started_ms is not None
    assert doc.finished_ms - doc.started_ms == 515


def test_anotherUsersExecution_isNotFound_likeAMissingOne(seeded: Seeded) -> None:
    """ada asking for the admin's execution gets the 404 a missing id gets, naming it."""
    ada = _as(seeded.sand, "ada")
    with pytest.raises(NotFound) as hidden:
        ada.execution(seeded.admins)
    with pytest.raises(NotFound) as missing:
        ada.execution("nope")
    assert hidden.value.server_message == f"no execution '{seeded.admins}' is recorded"
    assert missing.value.server_message == "no execution 'nope' is recorded"
    assert isinstance(missing.value, SandApiError) and missing.value.status == 404


def test_history_isTypedEvents_andPagesAreFollowed(seeded: Seeded) -> None:
    """Events keep their order; the common keys are fields, the rest details with accessors."""
    ada = _as(seeded.sand, "ada")
    page = ada.history(seeded.failed, limit=4)
    assert len(page.events) == 4 and page.next_page is not None and not page.truncated
    events = list(ada.all_history(seeded.failed, limit=4))
    assert [e.type for e in events][:2] == ["ExecutionStarted", "StateEntered"]
    assert len(events) == 11
    failed = next(e for e in events if e.type == "TaskFailed")
    assert isinstance(failed, HistoryEvent)
    assert (failed.state, failed.path, failed.grain, failed.host, failed.pid) == (
        "Ship",
        "Fan[1]",
        "ship",
        "host-1",
        4243,
    )
    assert (failed.error, failed.duration_ms, failed.failed) == ("ValueError", 500, True)
    assert failed.to_json()["cause"] == "no address [a-z]+ for order 7"


def test_stop_abortsARunningExecution_withTheServersDefaults(seeded: Seeded) -> None:
    """stop() sends no error or cause unless given: the server's defaults name the caller."""
    ada = _as(seeded.sand, "ada")
    stopped = ada.stop(seeded.running)
    assert (stopped.status, stopped.error, stopped.cause) == (
        "ABORTED",
        "States.Aborted",
        "stopped by ada",
    )
    assert seeded.sand.store.requests[-1].body == {}


def test_stop_sendsTheGivenErrorAndCause(seeded: Seeded) -> None:
    stopped = _as(seeded.sand, "ada").stop(seeded.running, error="Ops.Cancel", cause="bad order")
    assert (stopped.error, stopped.cause) == ("Ops.Cancel", "bad order")
    assert seeded.sand.store.requests[-1].body == {"error": "Ops.Cancel", "cause": "bad order"}


def test_stopOfAFinishedExecution_isConflict_namingItsStatus(seeded: Seeded) -> None:
    with pytest.raises(Conflict) as refused:
        _as(seeded.sand, "ada").stop(seeded.succeeded)
    assert refused.value.status == 409
    assert refused.value.server_message == (
        f"execution '{seeded.succeeded}' has already finished: it is SUCCEEDED"
    )


def test_redrive_runsAFailedExecutionAgain(seeded: Seeded) -> None:
    """A FAILED execution comes back RUNNING with redrive_count 1; a succeeded one is a 409."""
    ada = _as(seeded.sand, "ada")
    again = ada.redrive(seeded.failed)
    assert (again.status, again.redrive_count, again.error) == ("RUNNING", 1, None)
    with pytest.raises(Conflict, match="only a FAILED or ABORTED execution can be redriven"):
        ada.redrive(seeded.succeeded)


def test_invoke_withAName_isIdempotent(seeded: Seeded) -> None:
    """The second start with the same name and input is the first execution (existing=True);
    another input under that name is a Conflict naming it."""
    ada = _as(seeded.sand, "ada")
    first = ada.invoke("shop", {"order": 9}, name="order-9", trace=True)
    assert (first.status, first.output, first.name, first.existing) == (
        "SUCCEEDED",
        {"order": 9},
        "order-9",
        False,
    )
    assert first.trace is not None
    again = ada.invoke("shop", {"order": 9}, name="order-9")
    assert (again.execution_id, again.existing) == (first.execution_id, True)
    with pytest.raises(Conflict, match="'order-9' was used with another input"):
        ada.invoke("shop", {"order": 10}, name="order-9")
    sent = seeded.sand.store.requests[-3].path
    assert "name=order-9" in sent and "trace=1" in sent


def test_describe_isTheTypedApp_andTheDocumentIsKept(seeded: Seeded) -> None:
    ada = _as(seeded.sand, "ada")
    app = ada.describe("shop")
    assert isinstance(app, AppInfo)
    assert (app.name, app.owner, app.grains, app.default_workflow) == (
        "shop",
        "ada",
        ("first",),
        "main",
    )
    assert app.limits is not None and app.limits.timeout_s == 30
    assert app.placement is not None and app.placement.grains == {"first": ("host-1",)}
    assert app.document["state"] == "running"  # beyond the schema, still there
    assert [a.name for a in ada.list_apps()] == ["shop"]
    assert ada.app("shop")["owner"] == "ada"  # the raw document, as before


def test_health_isTyped(sand: FakeSand) -> None:
    client = SandClient(sand.gateway_url, token="unused", timeout_s=10)
    health = client.health()
    assert (health.status, health.service, health.error) == ("ok", "frontend", None)
    assert client.healthy()


def test_errors_haveAClassPerStatus_underSandApiError(sand: FakeSand) -> None:
    """Each status a caller branches on has its class; all stay SandApiError (old handlers
    keep working); unknown 4xx/5xx fall to ClientError/ServerError."""
    assert error_class(400) is BadRequest
    assert error_class(401) is Unauthorized and issubclass(Unauthorized, ClientError)
    assert error_class(403) is Forbidden
    assert error_class(404) is NotFound and error_class(409) is Conflict
    assert error_class(503) is ServiceUnavailable and issubclass(ServiceUnavailable, ServerError)
    assert error_class(504) is GatewayTimeout
    assert error_class(418) is ClientError and error_class(599) is ServerError
    assert all(issubclass(error_class(s), SandApiError) for s in (0, 400, 418, 500, 599, 302))
    with pytest.raises(Unauthorized) as refused:
        SandClient(sand.gateway_url, token="sand_" + "x" * 43).whoami()
    assert "was refused (unknown, revoked or expired)" in str(refused.value)
    assert refused.value.server_message == "the token is not valid (unknown, revoked or expired)"


def test_unreachableGateway_isUnreachable_status0() -> None:
    with pytest.raises(Unreachable) as refused:
        SandClient("http://127.0.0.1:9", token="t", timeout_s=5).execution("x")
    assert refused.value.status == 0 and "cannot reach SAND" in str(refused.value)
