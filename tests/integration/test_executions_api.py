"""Execution records on the real stack (issue 13, decision 0018): the listing, one
execution's record, its history, idempotent starts by name.

History events reach Cassandra the way a grain instance sends them: a HISTORY
EventMessage (payload = JSON list of events) pushed to the host agent's queue, which
publishes it to ``sand.history``; the recorder of group ``sand-records`` writes it. The
tests push such messages themselves (built with ``sand_worker.bus``), so they check the
recording and reading side whatever the instances emit; results go the same way through
``sand.results`` (RESULT/ERROR events), from real executions or pushed like the stop code
pushes an ABORTED one."""

from __future__ import annotations

import json
import secrets
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
import requests
from sand import keys
from sand.client import SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor
from sand.contracts import ExecutionStatus, result_document
from sand_worker.bus import FINAL_FLAG, EventFlag, EventKind, EventMessage, encode, now_ms

from tests.integration.tenants import Tenant, make_tenant, renamed_app

pytestmark = pytest.mark.integration

HELLO = Path(__file__).resolve().parents[2] / "examples" / "hello"
STEER = Path(__file__).resolve().parent / "apps" / "steer"
WAIT_S = 60


@dataclass(frozen=True)
class Api:
    """Raw HTTP calls through nginx with one tenant's token."""

    base: str
    token: str

    def get(self, path: str, **params: Any) -> requests.Response:
        return requests.get(
            self.base + path,
            params=params,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=60,
        )

    def invoke(self, app: str, body: Any, **params: Any) -> requests.Response:
        return requests.post(
            f"{self.base}/v1/apps/{app}/invoke",
            params=params,
            json=body,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=120,
        )


@pytest.fixture(scope="module")
def admin(cluster: Supervisor, cluster_config: ClusterConfig) -> SandClient:
    return SandClient(cluster_config.gateway_url, token=admin_token(cluster_config), timeout_s=120)


@pytest.fixture(scope="module")
def alice(admin: SandClient, cluster_config: ClusterConfig) -> Tenant:
    return make_tenant(admin, cluster_config, "exa")


@pytest.fixture(scope="module")
def bob(admin: SandClient, cluster_config: ClusterConfig) -> Tenant:
    return make_tenant(admin, cluster_config, "exb")


@pytest.fixture(scope="module")
def app(alice: Tenant, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """examples/hello under a name of alice's own, deployed by her."""
    name = f"hello-{alice.name}"
    alice.client.deploy(
        renamed_app(HELLO, name, tmp_path_factory.mktemp("apps")), backend="process"
    )
    yield name
    alice.client.undeploy(name)


@pytest.fixture(scope="module")
def asl_app(alice: Tenant, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The ASL test app `steer` under a name of alice's own (workflow `tour`: every kind of
    state once)."""
    name = f"steer-{alice.name}"
    alice.client.deploy(
        renamed_app(STEER, name, tmp_path_factory.mktemp("apps")), backend="process"
    )
    yield name
    alice.client.undeploy(name)


@pytest.fixture(scope="module")
def api(cluster_config: ClusterConfig, alice: Tenant) -> Api:
    return Api(cluster_config.gateway_url, alice.token)


@pytest.fixture(scope="module")
def agent_queue(cluster_config: ClusterConfig) -> Callable[[EventMessage], None]:
    """Pushes one event to the host agent's queue, as a grain instance does."""
    client = redis.Redis(
        unix_socket_path=str(cluster_config.redis_socket),
        password=cluster_config.redis_password,
    )
    queue = keys.agent_key(cluster_config.host_id)

    def push(event: EventMessage) -> None:
        client.lpush(queue, encode(event))

    return push


def _history(execution_id: str, app: str, events: list[dict[str, Any]]) -> EventMessage:
    """One HISTORY message, as an instance sends the events of one step."""
    return EventMessage(
        kind=EventKind.HISTORY,
        flag=EventFlag.FINISHED,
        execution_id=execution_id,
        event_id=uuid.uuid4().hex,
        app=app,
        workflow="main",
        host="host-1",
        created_ms=now_ms(),
        payload=json.dumps(events).encode(),
    )


def _started(execution_id: str, app: str, at_ms: int, payload: Any, name: str | None = None) -> Any:
    return {
        "type": "ExecutionStarted",
        "at_ms": at_ms,
        "execution_id": execution_id,
        "state": None,
        "path": "",
        "input": payload,
        "workflow": "main",
        "app": app,
        "name": name,
        "redrive_count": 0,
    }


def _result(
    execution_id: str, app: str, status: ExecutionStatus, at_ms: int, started_ms: int | None = None
) -> EventMessage:
    """A RESULT or ERROR event whose document has ``status`` (ABORTED as the stop code
    writes it: an ERROR event) and, as an instance writes it, the execution's start."""
    ok = status == ExecutionStatus.SUCCEEDED
    error = None if ok else ("States.Aborted" if status == ExecutionStatus.ABORTED else "Boom")
    document = result_document(
        status,
        execution_id=execution_id,
        app=app,
        workflow="main",
        started_ms=started_ms,
        finished_ms=at_ms,
        output={"ok": True} if ok else None,
        error=error,
        cause=None if ok else "test",
    )
    kind = EventKind.RESULT if ok else EventKind.ERROR
    return EventMessage(
        kind=kind,
        flag=FINAL_FLAG[kind],
        execution_id=execution_id,
        event_id=uuid.uuid4().hex,
        app=app,
        workflow="main",
        source_grain="greet",
        target_grain="",
        host="host-1",
        created_ms=at_ms,
        payload=json.dumps(document).encode(),
        error=error or "",
        cause="" if ok else "test",
    )


def _eventually(check: Callable[[], Any], what: str) -> Any:
    """``check()``'s first truthy answer within WAIT_S (records are written asynchronously)."""
    deadline = time.monotonic() + WAIT_S
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {WAIT_S} s (last: {last!r})")


def _listed(api: Api, **params: Any) -> list[dict[str, Any]]:
    """Every row of a listing, following next_page with the same parameters."""
    rows: list[dict[str, Any]] = []
    page: str | None = None
    while True:
        answer = api.get("/v1/executions", **params, **({"page": page} if page else {}))
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert set(body) == {"executions", "next_page"}
        rows += body["executions"]
        page = body["next_page"]
        if page is None:
            return rows


@pytest.fixture(scope="module")
def recorded(
    app: str, api: Api, agent_queue: Callable[[EventMessage], None]
) -> dict[str, dict[str, Any]]:
    """Six executions of alice's app, by id, started one ms apart: two SUCCEEDED (their
    result pushed before their start, as can happen: different topics), then one each
    SUCCEEDED, RUNNING, FAILED and ABORTED (start, then result; ABORTED as the stop code
    sends it, an ERROR event whose document says ABORTED)."""
    t0 = now_ms() - 10_000
    statuses = ("SUCCEEDED", "SUCCEEDED", "SUCCEEDED", "RUNNING", "FAILED", "ABORTED")
    made = {
        uuid.uuid4().hex: {"status": status, "input": {"n": i}, "at": t0 + i}
        for i, status in enumerate(statuses)
    }
    for i, (execution_id, want) in enumerate(made.items()):
        start = _history(
            execution_id,
            app,
            [_started(execution_id, app, want["at"], want["input"], f"n-{execution_id[:8]}")],
        )
        end = (
            _result(
                execution_id,
                app,
                ExecutionStatus(want["status"]),
                want["at"] + 500,
                started_ms=want["at"],
            )
            if want["status"] != "RUNNING"
            else None
        )
        if i < 2 and end is not None:
            agent_queue(end)
            time.sleep(1.5)  # recorded before its start arrives
            agent_queue(start)
        else:
            agent_queue(start)
            if end is not None:
                agent_queue(end)

    def all_there() -> bool:
        rows = {row["execution_id"]: row for row in _listed(api, app=app)}
        return all(
            execution_id in rows and rows[execution_id]["status"] == want["status"]
            for execution_id, want in made.items()
        )

    _eventually(all_there, "the six executions listed with their final status")
    return made


def test_list_newestFirst_eachFilter_andPaging(
    api: Api, app: str, recorded: dict[str, dict[str, Any]]
) -> None:
    """The listing of one app is newest first; status and since select; pages of 2 give
    the same rows as one page; each row is a summary of the contract."""
    rows = _listed(api, app=app)
    assert [row["execution_id"] for row in rows] == sorted(
        recorded, key=lambda e: recorded[e]["at"], reverse=True
    )
    for row in rows:
        want = recorded[row["execution_id"]]
        assert row["app"] == app
        assert row["workflow"] == "main"
        assert row["started_ms"] == want["at"]
        assert row["name"] == f"n-{row['execution_id'][:8]}"
        if row["status"] == "RUNNING":
            assert "finished_ms" not in row and "error" not in row
        elif row["status"] in ("FAILED", "ABORTED"):
            assert row["error"] == ("Boom" if row["status"] == "FAILED" else "States.Aborted")
            assert row["cause"] == "test"
            assert row["finished_ms"] == want["at"] + 500
        else:
            assert row["finished_ms"] == want["at"] + 500
            assert "error" not in row

    for status in ("RUNNING", "SUCCEEDED", "FAILED", "ABORTED"):
        selected = [row["execution_id"] for row in _listed(api, app=app, status=status)]
        assert selected == [row["execution_id"] for row in rows if row["status"] == status]

    third = sorted(recorded.values(), key=lambda w: w["at"])[3]["at"]
    recent = _listed(api, app=app, since=str(third))
    assert [row["execution_id"] for row in recent] == [row["execution_id"] for row in rows][:3]
    rfc3339 = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(third // 1000)) + "Z"
    assert len(_listed(api, app=app, since=rfc3339)) >= 3

    first = api.get("/v1/executions", app=app, limit="2").json()
    assert len(first["executions"]) == 2 and first["next_page"]
    assert _listed(api, app=app, limit="2") == rows

    # without app: every app of the caller's, alice's six among them
    mine = {row["execution_id"] for row in _listed(api, limit="1000")}
    assert set(recorded) <= mine


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"status": "DONE"}, "status must be one of RUNNING, SUCCEEDED, FAILED, ABORTED"),
        ({"limit": "0"}, "limit must be an integer 1..1000, got '0'"),
        ({"limit": "1001"}, "limit must be an integer 1..1000"),
        ({"since": "yesterday"}, "since must be epoch milliseconds or an RFC 3339 timestamp"),
        ({"page": "not-a-token"}, "page must be a next_page token"),
        ({"app": "Bad_App!"}, "app:"),
    ],
)
def test_list_badParameter_is400NamingIt(
    api: Api, params: dict[str, str], named: str, cluster: Supervisor
) -> None:
    answer = api.get("/v1/executions", **params)
    assert answer.status_code == 400, answer.text
    assert named in answer.json()["error"]


def test_show_runningExecution_hasItsInputNameAndStart(
    api: Api, recorded: dict[str, dict[str, Any]]
) -> None:
    """A RUNNING execution known only from its record is shown with its input and name."""
    execution_id = next(e for e, w in recorded.items() if w["status"] == "RUNNING")
    answer = api.get(f"/v1/executions/{execution_id}")
    assert answer.status_code == 200, answer.text
    doc = answer.json()
    assert doc["status"] == "RUNNING"
    assert doc["input"] == recorded[execution_id]["input"]
    assert doc["name"] == f"n-{execution_id[:8]}"
    assert doc["started_ms"] == recorded[execution_id]["at"]
    assert "finished_ms" not in doc


def test_show_abortedExecution_isAbortedNotFailed(
    api: Api, recorded: dict[str, dict[str, Any]]
) -> None:
    execution_id = next(e for e, w in recorded.items() if w["status"] == "ABORTED")
    doc = api.get(f"/v1/executions/{execution_id}").json()
    assert doc["status"] == "ABORTED"
    assert doc["error"] == "States.Aborted"
    assert doc["input"] == recorded[execution_id]["input"]


def test_history_comesBackPagedAndInOrder(
    api: Api, app: str, agent_queue: Callable[[EventMessage], None]
) -> None:
    """Two HISTORY messages of one execution: its events come back in order (time, then
    message, then place in it), in pages that join up, not truncated."""
    execution_id = uuid.uuid4().hex
    t0 = now_ms()
    base = {"execution_id": execution_id, "path": ""}
    first = [
        _started(execution_id, app, t0, {"x": 1}),
        {**base, "type": "StateEntered", "at_ms": t0, "state": "A", "input": {"x": 1}},
        {
            **base,
            "type": "TaskScheduled",
            "at_ms": t0 + 1,
            "state": "A",
            "grain": "greet",
            "input": {"x": 1},
            "timeout_s": 60,
        },
    ]
    second = [
        {
            **base,
            "type": "TaskSucceeded",
            "at_ms": t0 + 5,
            "state": "A",
            "grain": "greet",
            "host": "host-1",
            "pid": 7,
            "output": {"y": 2},
            "duration_ms": 4,
        },
        {
            **base,
            "type": "StateExited",
            "at_ms": t0 + 5,
            "state": "A",
            "output": {"y": 2},
            "steps": {"result": {"y": 2}},
        },
        {**base, "type": "ExecutionSucceeded", "at_ms": t0 + 6, "state": None, "output": {"y": 2}},
    ]
    agent_queue(_history(execution_id, app, first))
    agent_queue(_history(execution_id, app, second))

    def whole() -> list[dict[str, Any]] | None:
        events: list[dict[str, Any]] = []
        page: str | None = None
        pages = 0
        while True:
            params = {"limit": "2", **({"page": page} if page else {})}
            answer = api.get(f"/v1/executions/{execution_id}/history", **params)
            if answer.status_code == 404:
                return None
            assert answer.status_code == 200, answer.text
            body = answer.json()
            assert set(body) == {"execution_id", "events", "next_page", "truncated"}
            assert body["execution_id"] == execution_id and body["truncated"] is False
            assert len(body["events"]) <= 2
            events += body["events"]
            pages += 1
            page = body["next_page"]
            if page is None:
                return events if len(events) == 6 else None

    assert _eventually(whole, "the six history events") == first + second
    one_page = api.get(f"/v1/executions/{execution_id}/history").json()
    assert one_page["events"] == first + second and one_page["next_page"] is None


def test_history_badLimit_is400(api: Api, recorded: dict[str, dict[str, Any]]) -> None:
    execution_id = next(iter(recorded))
    answer = api.get(f"/v1/executions/{execution_id}/history", limit="5000")
    assert answer.status_code == 400
    assert "limit must be an integer 1..1000" in answer.json()["error"]


def test_anotherUsersExecution_isAMissingOne(
    cluster_config: ClusterConfig, bob: Tenant, app: str, recorded: dict[str, dict[str, Any]]
) -> None:
    """Bob sees none of alice's executions: not in his listings, 404 on show and history
    with the text of a missing execution."""
    theirs = Api(cluster_config.gateway_url, bob.token)
    assert _listed(theirs, app=app) == []
    assert not set(recorded) & {row["execution_id"] for row in _listed(theirs, limit="1000")}
    missing = uuid.uuid4().hex
    for execution_id in recorded:
        for suffix in ("", "/history"):
            answer = theirs.get(f"/v1/executions/{execution_id}{suffix}")
            nothing = theirs.get(f"/v1/executions/{missing}{suffix}")
            assert answer.status_code == nothing.status_code == 404, (suffix, answer.text)
            assert answer.json()["error"] == nothing.json()["error"].replace(missing, execution_id)


def test_admin_listsEveryonesExecutions(
    cluster_config: ClusterConfig, app: str, recorded: dict[str, dict[str, Any]]
) -> None:
    admin = Api(cluster_config.gateway_url, admin_token(cluster_config))
    assert set(recorded) <= {row["execution_id"] for row in _listed(admin, app=app)}
    assert set(recorded) <= {row["execution_id"] for row in _listed(admin, limit="1000")}


def test_namedStart_sameInputIsTheSameExecution_otherInputIs409(api: Api, app: str) -> None:
    """The first start with a name runs; the same name and input answers that execution
    (X-Sand-Existing); another input is refused naming the name; a bad name names the rule."""
    name = f"order-{secrets.token_hex(4)}"
    first = api.invoke(app, {"name": "grace hopper"}, name=name)
    assert first.status_code == 200, first.text
    execution_id = first.headers["X-Sand-Execution-Id"]
    assert first.json()["status"] == "SUCCEEDED"
    assert "X-Sand-Existing" not in first.headers

    again = api.invoke(app, {"name": "grace hopper"}, name=name)
    assert again.status_code == 200, again.text
    assert again.headers["X-Sand-Existing"] == "1"
    assert again.headers["X-Sand-Execution-Id"] == execution_id
    assert again.json()["execution_id"] == execution_id
    assert again.json()["output"] == first.json()["output"]

    later = api.invoke(app, {"name": "grace hopper"}, name=name, mode="async")
    assert later.status_code == 202, later.text
    assert later.headers["X-Sand-Existing"] == "1"
    assert later.json()["execution_id"] == execution_id

    other = api.invoke(app, {"name": "someone else"}, name=name)
    assert other.status_code == 409, other.text
    assert f"'{name}'" in other.json()["error"]

    bad = api.invoke(app, {"name": "x"}, name="-starts-with-dash")
    assert bad.status_code == 400, bad.text
    assert "name must be 1 to 128 letters, digits" in bad.json()["error"]


def test_history_keepsAtMost10000Events_andSaysTruncated(
    api: Api, app: str, agent_queue: Callable[[EventMessage], None]
) -> None:
    """An execution that emits more than the cap keeps its first 10,000 events, in order,
    and its history says truncated."""
    execution_id = uuid.uuid4().hex
    t0 = now_ms()
    agent_queue(_history(execution_id, app, [_started(execution_id, app, t0, {})]))
    for message in range(11):  # 11,000 more: 1,000 per message
        events = [
            {
                "type": "WaitEnded",
                "at_ms": t0 + 1 + message * 1000 + i,
                "execution_id": execution_id,
                "state": "W",
                "path": "",
            }
            for i in range(1000)
        ]
        agent_queue(_history(execution_id, app, events))

    def whole() -> list[dict[str, Any]] | None:
        events: list[dict[str, Any]] = []
        page: str | None = None
        while True:
            params = {"limit": "1000", **({"page": page} if page else {})}
            body = api.get(f"/v1/executions/{execution_id}/history", **params).json()
            if "events" not in body:
                return None
            events += body["events"]
            page = body["next_page"]
            if page is None:
                return events if body["truncated"] else None

    events = _eventually(whole, "a truncated history")
    assert len(events) == 10_000
    assert events[0]["type"] == "ExecutionStarted"
    assert [e["at_ms"] for e in events[1:]] == list(range(t0 + 1, t0 + 10_000))


def test_realAslExecution_isListedShownAndHasItsHistory(api: Api, asl_app: str) -> None:
    """A named execution of an ASL workflow, run by the grain instances: its history starts
    with ExecutionStarted (input, name, start) and ends with ExecutionSucceeded, in time
    order; it is listed SUCCEEDED under its start and name."""
    name = f"tour-{secrets.token_hex(4)}"
    answer = api.invoke(asl_app, {"x": 1}, workflow="tour", name=name)
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "SUCCEEDED"
    execution_id = answer.headers["X-Sand-Execution-Id"]

    def history() -> list[dict[str, Any]] | None:
        reply = api.get(f"/v1/executions/{execution_id}/history", limit="1000")
        if reply.status_code != 200:
            return None
        events: list[dict[str, Any]] = reply.json()["events"]
        return events if events and events[-1]["type"] == "ExecutionSucceeded" else None

    events = _eventually(history, "the execution's whole history")
    started = events[0]
    assert started["type"] == "ExecutionStarted"
    assert started["input"] == {"x": 1} and started["name"] == name
    assert started["app"] == asl_app and started["workflow"] == "tour"
    assert [e["at_ms"] for e in events] == sorted(e["at_ms"] for e in events)
    assert {"StateEntered", "StateExited", "TaskScheduled", "TaskSucceeded"} <= {
        e["type"] for e in events
    }

    def listed() -> dict[str, Any] | None:
        rows = _listed(api, app=asl_app, status="SUCCEEDED")
        return next((row for row in rows if row["execution_id"] == execution_id), None)

    row = _eventually(listed, "the execution listed SUCCEEDED")
    assert row["name"] == name and row["workflow"] == "tour"
    assert row["started_ms"] == started.get("started_ms", started["at_ms"])
    assert row["finished_ms"] >= row["started_ms"]
