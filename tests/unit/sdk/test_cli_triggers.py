"""`sand triggers list|pause|resume` and the client's trigger methods against the twin, and
the trigger line of `sand execution show`: a table (or JSON) per the contract, the new state
after a pause or a resume, every refusal as one line on stderr with exit 2 and no traceback
(an unknown app with the closest name deployed, an unknown trigger with the app's ones)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sand.cli import cli
from sand.client import Execution, ExecutionSummary, NotFound, SandClient, TriggerInfo

from tests.unit.fake_executions import Reply
from tests.unit.fake_sand import FakeSand

pytestmark = [pytest.mark.usefixtures("isolated"), pytest.mark.timeout(30)]

NIGHTLY = {
    "name": "nightly",
    "kind": "schedule",
    "schedule": "cron(0 3 * * 1-5)",
    "timezone": "Europe/Paris",
    "workflow": "main",
    "input": {},
    "missed": "run_once",
    "paused": False,
    "paused_at": None,
    "next_firing": "2026-11-30T02:00:00Z",
    "last_firing": {"time": "2026-11-27T02:00:00Z", "execution_id": "3f2a" * 8},
}
ORDERS = {
    "name": "orders",
    "kind": "topic",
    "topic": "orders",
    "workflow": "main",
    "paused": False,
    "paused_at": None,
    "lag": 12,
}


class TriggerRoutes:
    """``/v1/apps/{app}/triggers`` and ``.../{name}/pause|resume`` of the contract, over the
    twin's apps (their owners' and admins' only, 404 otherwise like a missing app); other
    routes go on to the executions twin."""

    def __init__(self, sand: FakeSand, triggers: dict[str, list[dict[str, Any]]]) -> None:
        self.store = sand.store.executions
        self.triggers = triggers
        self.delegate: Callable[..., Reply | None] = self.store.handle

    def handle(
        self,
        method: str,
        collection: str,
        rest: list[str],
        query: dict[str, str],
        body: Any,
        user: str,
        role: str,
    ) -> Reply | None:
        if collection != "apps" or rest[1:2] != ["triggers"]:
            return self.delegate(method, collection, rest, query, body, user, role)
        app = self.store.apps.get(rest[0])
        if app is None or (role != "admin" and app["owner"] != user):
            return Reply(404, {"error": f"no application '{rest[0]}' is deployed"})
        listed = self.triggers.get(rest[0], [])
        if method == "GET" and len(rest) == 2:
            return Reply(200, {"triggers": listed})
        if method != "POST" or len(rest) != 4 or rest[3] not in ("pause", "resume"):
            return None
        trigger = next((t for t in listed if t["name"] == rest[2]), None)
        if trigger is None:
            names = ", ".join(t["name"] for t in listed)
            return Reply(
                404, {"error": f"no trigger '{rest[2]}' in app '{rest[0]}' (it has: {names})"}
            )
        paused = rest[3] == "pause"
        trigger.update(paused=paused, paused_at="2026-11-28T10:00:00Z" if paused else None)
        if trigger["kind"] == "schedule":
            trigger["next_firing"] = None if paused else "2026-11-30T02:00:00Z"
        return Reply(200, trigger)


@pytest.fixture
def shop(sand: FakeSand, monkeypatch: pytest.MonkeyPatch) -> FakeSand:
    """The twin with ada's app ``shop`` (triggers nightly and orders) and ``plain`` (none)."""
    sand.store.executions.add_app("shop", "ada")
    sand.store.executions.add_app("plain", "ada")
    routes = TriggerRoutes(sand, {"shop": [dict(NIGHTLY), dict(ORDERS)]})
    monkeypatch.setattr(sand.store.executions, "handle", routes.handle)
    return sand


def run(sand: FakeSand, *args: str) -> Result:
    env = {"SAND_TOKEN": sand.store.issue("ada"), "SAND_URL": sand.gateway_url}
    return CliRunner(mix_stderr=False).invoke(cli, list(args), env=env)


# -- the client --------------------------------------------------------------------------------


def test_client_triggers_areTypedDocuments(shop: FakeSand) -> None:
    api = SandClient(shop.gateway_url, token=shop.store.issue("ada"))
    nightly, orders = api.triggers("shop")
    assert nightly == TriggerInfo(
        name="nightly",
        kind="schedule",
        workflow="main",
        paused=False,
        paused_at=None,
        schedule="cron(0 3 * * 1-5)",
        timezone="Europe/Paris",
        input={},
        missed="run_once",
        next_firing="2026-11-30T02:00:00Z",
        last_firing={"time": "2026-11-27T02:00:00Z", "execution_id": "3f2a" * 8},
    )
    assert nightly.last_firing_time == "2026-11-27T02:00:00Z"
    assert nightly.last_execution_id == "3f2a" * 8
    assert (orders.kind, orders.topic, orders.lag, orders.last_firing_time) == (
        "topic",
        "orders",
        12,
        None,
    )


def test_client_pauseAndResume_returnTheNewState(shop: FakeSand) -> None:
    api = SandClient(shop.gateway_url, token=shop.store.issue("ada"))
    paused = api.pause_trigger("shop", "nightly")
    assert paused.paused and paused.paused_at == "2026-11-28T10:00:00Z"
    assert paused.next_firing is None
    resumed = api.resume_trigger("shop", "nightly")
    assert not resumed.paused and resumed.next_firing == "2026-11-30T02:00:00Z"
    assert shop.store.requests[-1].path == "/v1/apps/shop/triggers/nightly/resume"
    with pytest.raises(
        NotFound, match="no trigger 'nope' in app 'shop' \\(it has: nightly, orders\\)"
    ):
        api.pause_trigger("shop", "nope")


def test_client_executionDocuments_carryTheTrigger_olderOnesNone() -> None:
    """``trigger`` is read when the document has one; an older document without it, or a
    null, gives None."""
    trigger = {"name": "nightly", "kind": "schedule", "time": "2026-11-27T02:00:00Z"}
    assert Execution.from_json({"execution_id": "e", "trigger": trigger}).trigger == trigger
    assert Execution.from_json({"execution_id": "e"}).trigger is None
    assert Execution.from_json({"execution_id": "e", "trigger": None}).trigger is None
    row = {"execution_id": "e", "app": "a", "workflow": "w", "status": "RUNNING", "started_ms": 1}
    assert ExecutionSummary.from_json({**row, "trigger": trigger}).trigger == trigger
    assert ExecutionSummary.from_json(row).trigger is None


# -- sand triggers -----------------------------------------------------------------------------


def test_list_tablePerTheContract(shop: FakeSand) -> None:
    """NAME KIND SPEC WORKFLOW STATE NEXT/LAG LAST; ids and times whole."""
    result = run(shop, "triggers", "list", "shop")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    for column in ("name", "kind", "spec", "workflow", "state", "next/lag", "last"):
        assert column in out
    nightly = next(line for line in out.splitlines() if "nightly" in line)
    for part in (
        "schedule",
        "cron(0 3 * * 1-5) Europe/Paris",
        "active",
        "2026-11-30T02:00:00Z",
        "2026-11-27T02:00:00Z " + "3f2a" * 8,
    ):
        assert part in nightly, (part, nightly)
    orders = next(line for line in out.splitlines() if "orders" in line and "topic" in line)
    for part in ("topic orders", "main", "active", "lag 12"):
        assert part in orders, (part, orders)


def test_list_json_isTheDocuments(shop: FakeSand) -> None:
    result = run(shop, "triggers", "list", "shop", "--json")
    assert result.exit_code == 0, result.stderr
    listed = json.loads(result.stdout)["triggers"]
    assert listed[0] == {**NIGHTLY, "topic": None, "lag": None}
    assert listed[1]["lag"] == 12


def test_list_appWithoutTriggers_saysSo(shop: FakeSand) -> None:
    result = run(shop, "triggers", "list", "plain")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.strip() == "application 'plain' has no triggers"


def test_pause_thenResume_printTheNewState(shop: FakeSand) -> None:
    paused = run(shop, "triggers", "pause", "shop", "nightly")
    assert paused.exit_code == 0, paused.stderr
    assert paused.stderr.strip() == "trigger nightly of shop: paused since 2026-11-28T10:00:00Z"
    listed = run(shop, "triggers", "list", "shop")
    assert "paused" in next(line for line in listed.stdout.splitlines() if "nightly" in line)
    resumed = run(shop, "triggers", "resume", "shop", "nightly", "--json")
    assert resumed.exit_code == 0, resumed.stderr
    assert json.loads(resumed.stdout)["paused"] is False
    topic = run(shop, "triggers", "resume", "shop", "orders")
    assert topic.stderr.strip() == "trigger orders of shop: active, lag 12"


def test_unknownTrigger_exits2_namingTheAppsTriggers(shop: FakeSand) -> None:
    result = run(shop, "triggers", "pause", "shop", "nigthly")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: HTTP 404: no trigger 'nigthly' in app 'shop' (it has: nightly, orders)"
    )
    assert "Traceback" not in result.stderr
    as_json = run(shop, "triggers", "resume", "shop", "nigthly", "--json")
    assert as_json.exit_code == 2 and as_json.stdout == ""
    assert json.loads(as_json.stderr)["error"]["status"] == 404


def test_unknownApp_exits2_withTheClosestName(shop: FakeSand) -> None:
    result = run(shop, "triggers", "list", "shpo")
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: no application 'shpo'; did you mean 'shop'?"


# -- sand execution show -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("trigger", "line"),
    [
        (
            {"name": "nightly", "kind": "schedule", "time": "2026-11-27T02:00:00Z"},
            "started by trigger nightly (schedule, 2026-11-27T02:00:00Z)",
        ),
        (
            {"name": "orders", "kind": "topic", "topic": "orders", "partition": 0, "offset": 17},
            "started by trigger orders (topic orders, partition 0, offset 17)",
        ),
    ],
)
def test_executionShow_saysWhichTriggerStartedIt(
    sand: FakeSand, trigger: dict[str, Any], line: str
) -> None:
    store = sand.store.executions
    store.add_app("shop", "ada")
    started = store.add(
        {"app": "shop", "status": "RUNNING", "trigger": trigger},
        [{"type": "ExecutionStarted", "at_ms": 1, "trigger": trigger}],
    )
    plain = store.add(
        {"app": "shop", "status": "RUNNING"}, [{"type": "ExecutionStarted", "at_ms": 1}]
    )
    result = run(sand, "execution", "show", started)
    assert result.exit_code == 0, result.stderr
    assert line in result.stdout
    as_json = json.loads(run(sand, "execution", "show", started, "--json").stdout)
    assert as_json["execution"]["trigger"] == trigger
    assert "started by" not in run(sand, "execution", "show", plain).stdout
