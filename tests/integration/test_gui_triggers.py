"""The app page's Triggers section (issue 23, decision 0034) in a real browser, against the
suite's real stack: an app with a ``rate(1 minute)`` schedule and a topic trigger lists both
with their specs; Pause and Resume change the schedule on the server (the API agrees, a
reload shows it); a firing is linked from the app page, and its execution's page names the
trigger that started it. Through the ``data-testid``s of the GUI only.

Playwright's sync API allows one instance per thread and the ``browser`` fixture of
``gui_fixtures.py`` (``test_gui.py``, ``test_gui_executions.py``) keeps the main thread's for
the whole session, so each test here drives a Chromium of its own from a thread of its own
(``in_browser``)."""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import Page, expect, sync_playwright
from sand.client import SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

from tests.integration.gui_support import CHROMIUM, CHROMIUM_ARGS, DESKTOP, FAILURES, sign_in
from tests.integration.kafka_topics import app_with_topic, create_topic
from tests.integration.tenants import Tenant, make_tenant

pytestmark = pytest.mark.integration

APP = Path(__file__).resolve().parent / "apps" / "triggers"
# rate(1 minute) fires at every whole minute (aligned to the epoch, UTC): its next firing,
# as the tooltip of its local time shows it.
NEXT_MINUTE_UTC = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:00 UTC$")
BROWSER_S = 240  # the browser part of a test (pytest's own timeout is 300 s)


# --- fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def admin(cluster: Supervisor, cluster_config: ClusterConfig) -> SandClient:
    return SandClient(cluster_config.gateway_url, token=admin_token(cluster_config), timeout_s=120)


@pytest.fixture(scope="module")
def alice(admin: SandClient, cluster_config: ClusterConfig) -> Tenant:
    return make_tenant(admin, cluster_config, "gui-alice")


@pytest.fixture(scope="module")
def triggered(
    alice: Tenant, cluster_config: ClusterConfig, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """apps/triggers under a fresh name of alice's (its schedule ``tick``, its topic trigger
    ``orders``), deployed on the process backend once its topic exists (the cluster refuses
    a topic trigger whose topic it does not have); its name."""
    name = f"gui-triggers-{secrets.token_hex(3)}"
    app, topic = app_with_topic(APP, name, tmp_path_factory.mktemp("apps"))
    create_topic(cluster_config, topic)
    alice.client.deploy(app, backend="process")
    yield name
    alice.client.undeploy(name)


# --- helpers -------------------------------------------------------------------------------------
def in_browser(config: ClusterConfig, test: str, body: Callable[[Page], None]) -> None:
    """Runs ``body`` with a fresh page (no token, 1280x800) of a headless Debian Chromium
    driven from a thread of its own, and raises here what it raised; a hard limit of
    ``BROWSER_S``. A failure leaves a screenshot, the page's HTML and the browser's console
    in build/gui-failures/, as the other GUI tests' do."""
    failures: list[BaseException] = []

    def run() -> None:
        console: list[str] = []
        try:
            with sync_playwright() as driver:
                browser = driver.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
                )
                try:
                    context = browser.new_context(base_url=config.gateway_url, viewport=DESKTOP)  # type: ignore[arg-type]
                    context.set_default_timeout(15_000)
                    page = context.new_page()
                    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
                    page.on("pageerror", lambda error: console.append(f"page error: {error}"))
                    try:
                        body(page)
                    except BaseException:
                        keep_failure(page, console, test)
                        raise
                finally:
                    browser.close()
        except BaseException as exc:  # raised again in the test's own thread
            failures.append(exc)

    thread = threading.Thread(target=run, name=f"browser-{test}", daemon=True)
    thread.start()
    thread.join(BROWSER_S)
    assert not thread.is_alive(), f"the browser part of {test} still runs after {BROWSER_S} s"
    if failures:
        raise failures[0]


def keep_failure(page: Page, console: list[str], test: str) -> None:
    FAILURES.mkdir(parents=True, exist_ok=True)
    (FAILURES / f"{test}.console.txt").write_text("\n".join(console) + "\n")
    try:
        page.screenshot(path=str(FAILURES / f"{test}-0.png"), full_page=True)
        (FAILURES / f"{test}-0.html").write_text(page.content())
    except Exception as exc:  # the page may be gone; the test's own failure matters
        print(f"no screenshot of {test}: {exc}")


def triggers_of(config: ClusterConfig, tenant: Tenant, app: str) -> dict[str, dict[str, Any]]:
    """``GET /v1/apps/{app}/triggers`` as ``tenant``: each trigger's document by name."""
    answer = requests.get(
        f"{config.gateway_url}/v1/apps/{app}/triggers",
        headers={"Authorization": f"Bearer {tenant.token}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return {t["name"]: t for t in answer.json()["triggers"]}


# --- the tests -----------------------------------------------------------------------------------
def test_appPage_listsBothTriggers_andPauseThenResumeTheSchedule_asTheApiSays(
    alice: Tenant, triggered: str, cluster_config: ClusterConfig, request: pytest.FixtureRequest
) -> None:
    """Both triggers are listed with their specs; Pause shows Paused (the server's answer,
    kept over a reload, the API agrees); Resume makes it Active with a next firing again."""

    def check(page: Page) -> None:
        sign_in(page, alice.token, alice.name)
        page.goto(f"/ui/apps/{triggered}")
        expect(page.get_by_test_id("app-title")).to_contain_text(triggered)
        section = page.get_by_test_id("triggers")
        tick = section.get_by_test_id("trigger-row-tick")
        orders = section.get_by_test_id("trigger-row-orders")

        expect(tick.get_by_test_id("trigger-kind")).to_have_text("schedule")
        expect(tick.get_by_test_id("trigger-spec")).to_have_text("rate(1 minute)")
        expect(tick.get_by_test_id("trigger-workflow")).to_have_text("main")
        expect(tick.get_by_test_id("trigger-state")).to_have_text("Active")
        # the next firing in local time, its UTC (a whole minute) in the tooltip
        expect(tick.get_by_test_id("trigger-next").locator("[title]").first).to_have_attribute(
            "title", NEXT_MINUTE_UTC
        )
        expect(orders.get_by_test_id("trigger-kind")).to_have_text("topic")
        expect(orders.get_by_test_id("trigger-spec")).to_have_text(f"topic {triggered}.orders")
        expect(orders.get_by_test_id("trigger-workflow")).to_have_text("main")
        expect(orders.get_by_test_id("trigger-state")).to_have_text("Active")
        expect(orders.get_by_test_id("trigger-next")).to_have_text(
            re.compile(r"^(no records waiting|\d+ records? waiting|lag unknown)$")
        )
        expect(section.get_by_test_id("triggers-empty")).to_have_count(0)

        toggle = tick.get_by_test_id("trigger-toggle")
        expect(toggle).to_have_text("Pause")
        toggle.click()
        expect(tick.get_by_test_id("trigger-state")).to_have_text("Paused")
        expect(toggle).to_have_text("Resume")
        expect(tick.get_by_test_id("trigger-next")).to_contain_text("paused")
        expect(orders.get_by_test_id("trigger-state")).to_have_text("Active")  # not touched
        expect(page.get_by_test_id("error-banner")).to_have_count(0)
        listed = triggers_of(cluster_config, alice, triggered)
        assert listed["tick"]["paused"] is True, listed["tick"]
        assert listed["tick"]["next_firing"] is None, listed["tick"]
        assert listed["orders"]["paused"] is False, listed["orders"]

        page.reload()  # drawn from the server's list, not from the button's answer
        expect(tick.get_by_test_id("trigger-state")).to_have_text("Paused")
        toggle.click()
        expect(tick.get_by_test_id("trigger-state")).to_have_text("Active")
        expect(toggle).to_have_text("Pause")
        expect(tick.get_by_test_id("trigger-next").locator("[title]").first).to_have_attribute(
            "title", NEXT_MINUTE_UTC
        )
        listed = triggers_of(cluster_config, alice, triggered)
        assert listed["tick"]["paused"] is False, listed["tick"]
        assert listed["tick"]["next_firing"], listed["tick"]

    in_browser(cluster_config, request.node.name, check)


def test_aFiring_isLinkedFromTheAppPage_andItsExecutionNamesTheTrigger(
    alice: Tenant, triggered: str, cluster_config: ClusterConfig, request: pytest.FixtureRequest
) -> None:
    """The schedule fires within a minute (or two, around the pause of the test above); its
    last firing links to the execution it started, whose header says which trigger and when."""
    give_up = time.monotonic() + 150
    while not (last := triggers_of(cluster_config, alice, triggered)["tick"]["last_firing"]):
        assert time.monotonic() < give_up, "tick did not fire within 150 s"
        time.sleep(2)
    execution_id = last["execution_id"]
    fired = last["time"]  # 2026-11-27T11:14:00Z
    fired_utc = fired.replace("T", " ").replace("Z", " UTC")

    def check(page: Page) -> None:
        sign_in(page, alice.token, alice.name)
        page.goto(f"/ui/apps/{triggered}")
        tick = page.get_by_test_id("triggers").get_by_test_id("trigger-row-tick")
        link = tick.get_by_test_id("trigger-last").get_by_role("link")
        # a later firing may have come meanwhile: the link names the latest
        expect(link).to_have_attribute("href", re.compile(r"^/ui/executions/[^/]+$"))
        page.goto(f"/ui/executions/{execution_id}")
        line = page.get_by_test_id("execution-trigger")
        expect(line).to_contain_text("Started by trigger tick (schedule, ")
        expect(line.locator("[title]").first).to_have_attribute("title", fired_utc)

    in_browser(cluster_config, request.node.name, check)
