"""The web GUI's pages of executions (issue 14; issues 23 and 24) in a real browser:
invoking from an app's page (bad JSON sends nothing; sync and async), the timeline and each
state's details, the executions list and its filters; a failed execution (its failed state
highlighted, its error in the list, redriven to success), a failed Parallel's sibling shown
cancelled, a Map item's own log lines, a state waiting for a callback, and the Stop button.
All on alice's ``story`` app, deployed with the API.

Playwright drives Debian's Chromium, headless, against the suite's real stack behind nginx
(``cluster_config.gateway_url``), through the ``data-testid``s of the GUI contract only. The
fixtures are in ``gui_fixtures.py``, the steps shared with ``test_gui.py`` (sign-in, apps)
in ``gui_support.py``."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect
from sand.client import Conflict

from tests.integration.gui_support import (
    fill_json_input,
    node,
    set_editor_text,
    sign_in,
    start,
    wait_done,
)
from tests.integration.tenants import Tenant

pytest_plugins = ["tests.integration.gui_fixtures"]
pytestmark = pytest.mark.integration


# --- helpers -------------------------------------------------------------------------------------
def wait_status(page: Page, expected: str, timeout_s: float = 60) -> None:
    """Wait for ``execution-status`` to read ``expected``; the page is reloaded every few
    seconds in case it does not poll by itself."""
    status = page.get_by_test_id("execution-status")
    give_up = time.monotonic() + timeout_s
    while True:
        try:
            expect(status).to_have_text(expected, timeout=3_000)
            return
        except AssertionError:
            if time.monotonic() > give_up:
                raise
            page.reload()


def listed_error(page: Page, execution_id: str, text: str) -> None:
    """The executions list shows ``text`` in the execution's error cell (the listing is
    written off the path: reload until it is, up to 20 s)."""
    deadline = time.monotonic() + 20
    while True:
        page.goto("/ui/executions")
        cell = page.get_by_test_id(f"execution-row-{execution_id}").get_by_test_id("row-error")
        try:
            expect(cell).to_contain_text(text, timeout=2000)
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise


# --- invoke, the timeline and the executions list ------------------------------------------------
def test_invoke_badJsonSendsNothing_thenSyncAndAsync_openTheTimelineWithEachGrainsOutput(
    new_page: Callable[..., Page], alice: Tenant, story: str
) -> None:
    page = new_page()
    sign_in(page, alice.token, alice.name)
    page.goto(f"/ui/apps/{story}")
    page.get_by_test_id("workflow-select").select_option("main")
    invokes: list[str] = []
    page.on(
        "request", lambda request: invokes.append(request.url) if "/invoke" in request.url else None
    )

    fill_json_input(page, '{"name": "Ada",')
    page.get_by_test_id("invoke-submit").click()
    expect(page.get_by_test_id("invoke-error")).not_to_be_empty()
    page.wait_for_timeout(500)
    assert invokes == [], f"invalid JSON was sent: {invokes}"

    fill_json_input(page, '{"name": "Ada"}')
    page.get_by_test_id("invoke-mode").select_option("sync")
    page.get_by_test_id("invoke-submit").click()
    expect(page.get_by_test_id("invoke-result")).to_contain_text("HELLO, ADA!", timeout=60_000)
    assert len(invokes) == 1
    expect(page.get_by_test_id("invoke-error")).to_have_count(0)

    fill_json_input(page, '{"name": "Grace"}')
    page.get_by_test_id("invoke-mode").select_option("async")
    page.get_by_test_id("invoke-submit").click()
    link = page.get_by_test_id("invoke-execution-link")
    expect(link).to_be_visible(timeout=30_000)
    link.click()
    expect(page).to_have_url(re.compile(r"/ui/executions/[^/]+$"))
    execution_id = page.url.rstrip("/").rsplit("/", 1)[1]
    wait_status(page, "SUCCEEDED")
    assert alice.client.execution(execution_id).status == "SUCCEEDED"
    expect(page.get_by_test_id("execution-input")).to_contain_text("Grace")
    expect(page.get_by_test_id("execution-output")).to_contain_text("HELLO, GRACE!")
    for state in ("Greet", "Shout", "Mark", "Done"):
        expect(node(page, "execution-graph", state)).to_have_attribute("data-status", "succeeded")
    # One timeline row per state entry and grain instance, each with its host.
    rows = page.get_by_test_id("timeline").get_by_test_id("timeline-row")
    assert rows.count() >= 4, rows.all_inner_texts()
    expect(rows.filter(has_text="Greet").first).to_contain_text("host-1")

    # Each grain's output (and the grain's own log line) in the state's details.
    node(page, "execution-graph", "Greet").click()
    details = page.get_by_test_id("state-details")
    expect(details.get_by_test_id("state-input")).to_contain_text("Grace")
    expect(details.get_by_test_id("state-output")).to_contain_text("Hello, Grace")
    expect(details.get_by_test_id("state-logs")).to_contain_text("greeting Grace", timeout=30_000)
    rows.filter(has_text="Shout").first.click()
    expect(details.get_by_test_id("state-output")).to_contain_text("HELLO, GRACE!")

    # The executions list shows it, filtered by app and status.
    page.get_by_test_id("nav-executions").click()
    page.get_by_test_id("filter-app").select_option(story)
    page.get_by_test_id("filter-status").select_option("SUCCEEDED")
    row = page.get_by_test_id(f"execution-row-{execution_id}")
    # The listing is Cassandra's record of the end, which trails the document under load (a CI
    # run saw it still RUNNING there after the document said SUCCEEDED); the first page follows.
    expect(row).to_contain_text("SUCCEEDED", timeout=30_000)
    expect(row).to_contain_text("main")
    page.get_by_test_id("filter-status").select_option("FAILED")
    expect(page.get_by_test_id(f"execution-row-{execution_id}")).to_have_count(0)


# --- failure, redrive, stop ----------------------------------------------------------------------
def test_failedExecution_highlightsTheFailedState_andRedriveSucceeds(
    new_page: Callable[..., Page], alice: Tenant, story: str
) -> None:
    execution_id = start(alice, story, "failing", {"order": 7})
    assert wait_done(alice, execution_id) == "FAILED"
    page = new_page()
    sign_in(page, alice.token, alice.name)
    page.goto(f"/ui/executions/{execution_id}")
    expect(page.get_by_test_id("execution-status")).to_have_text("FAILED")
    banner = page.get_by_test_id("failed-banner")
    expect(banner).to_contain_text("Flaky")
    expect(banner).to_contain_text("RuntimeError")
    expect(banner).to_contain_text("the first run always fails")
    expect(page.get_by_test_id("execution-error")).to_contain_text("RuntimeError")
    expect(page.get_by_test_id("execution-cause")).to_contain_text("the first run always fails")
    flaky = node(page, "execution-graph", "Flaky")
    expect(flaky).to_have_attribute("data-status", "failed")
    expect(flaky).to_have_class(re.compile(r"\bfailed\b"))
    expect(node(page, "execution-graph", "Prepare")).to_have_attribute("data-status", "succeeded")
    expect(node(page, "execution-graph", "Done")).to_have_attribute("data-status", "not-run")
    # Opened with the failed state selected: its error and cause.
    details = page.get_by_test_id("state-details")
    expect(details.get_by_test_id("state-error")).to_contain_text("RuntimeError")
    expect(details.get_by_test_id("state-error")).to_contain_text("the first run always fails")
    expect(page.get_by_test_id("stop")).to_have_count(0)
    # Issue 24: the list says why each execution failed
    listed_error(page, execution_id, "RuntimeError: the first run always fails")
    page.goto(f"/ui/executions/{execution_id}")

    page.get_by_test_id("redrive").click()
    wait_status(page, "SUCCEEDED")
    assert alice.client.execution(execution_id).status == "SUCCEEDED"
    # The graph follows without a reload: the re-run state's new outcome.
    expect(node(page, "execution-graph", "Flaky")).to_have_attribute("data-status", "succeeded")
    expect(page.get_by_test_id("execution-output")).to_contain_text("flaky_runs")
    expect(page.get_by_test_id("redrive")).to_have_count(0)
    # the redrive is a row of the timeline, at its time (issue 24)
    expect(page.get_by_test_id("timeline-redrive")).to_contain_text("redrive 1 from Flaky")
    listed_error(page, execution_id, "(redriven 1×)")


def test_failedParallel_showsTheSiblingStillRunningThen_asCancelled_notRunning(
    new_page: Callable[..., Page], alice: Tenant, story: str
) -> None:
    """Issue 24: when one branch failed the execution, the branch still running was drawn
    "running" (blue bar, dashed node) on the FAILED execution. It is cancelled now; its grain,
    which is not stopped, shows what it really did once it ends, marked as after the run."""
    execution_id = start(alice, story, "sibling", {"order": 8, "nap_s": 4})
    assert wait_done(alice, execution_id) == "FAILED"
    page = new_page()
    sign_in(page, alice.token, alice.name)
    page.goto(f"/ui/executions/{execution_id}")
    expect(page.get_by_test_id("execution-status")).to_have_text("FAILED")
    expect(node(page, "execution-graph", "Flaky")).to_have_attribute("data-status", "failed")
    expect(node(page, "execution-graph", "Nap")).to_have_attribute("data-status", "cancelled")
    timeline = page.get_by_test_id("timeline")
    expect(timeline.get_by_test_id("timeline-row").filter(has_text="Nap").first).to_contain_text(
        "cancelled"
    )
    # nothing of the workflow runs; only a grain marked as running after the run may still
    expect(timeline.locator("tr:not(:has([data-testid=after-end])) .pill-running")).to_have_count(0)
    # the nap ends ~4 s after it started: its grain's row says so, the state stays cancelled
    time.sleep(4.5)
    page.reload()
    rows = page.get_by_test_id("timeline").get_by_test_id("timeline-row")
    nap_grain = rows.filter(has_text="grain slow").first
    expect(nap_grain).to_contain_text("succeeded", timeout=20_000)
    expect(nap_grain.get_by_test_id("after-end")).to_be_visible()
    expect(rows.filter(has_text="Nap").first).to_contain_text("cancelled")
    expect(node(page, "execution-graph", "Nap")).to_have_attribute("data-status", "cancelled")


def test_aMapItemsLogPanel_showsThatItemsLinesOnly_notItsSiblings(
    new_page: Callable[..., Page], alice: Tenant, story: str
) -> None:
    """Issue 24: the failing item's log panel showed every item's lines (all tagged with the
    same execution and grain). Each line now carries the item's path too."""
    items = [{"sku": "a"}, {"sku": "b"}, {"sku": "c"}]
    execution_id = start(alice, story, "items", {"items": items})
    assert wait_done(alice, execution_id) == "FAILED"
    page = new_page()
    sign_in(page, alice.token, alice.name)
    page.goto(f"/ui/executions/{execution_id}")
    expect(page.get_by_test_id("execution-status")).to_have_text("FAILED")
    # it opens where the failure began: the failed item's grain, its traceback in its logs
    details = page.get_by_test_id("state-details")
    expect(details.locator("h2")).to_contain_text("PriceItems[1]")
    logs = details.get_by_test_id("state-logs")
    expect(logs).to_contain_text("ValueError: no price for b", timeout=30_000)
    rows = page.get_by_test_id("timeline").get_by_test_id("timeline-row")
    rows.filter(has_text="PriceItems[1]").filter(has_text="failed").first.click()
    expect(logs).to_contain_text("pricing b", timeout=30_000)  # the logger, at INFO
    expect(logs).to_contain_text("printed b")
    expect(logs).to_contain_text("ValueError: no price for b")
    for sibling in ("a", "c"):
        expect(logs).not_to_contain_text(f"pricing {sibling}")
        expect(logs).not_to_contain_text(f"printed {sibling}")
    rows.filter(has_text="PriceItems[2]").first.click()
    expect(logs).to_contain_text("pricing c", timeout=30_000)
    expect(logs).not_to_contain_text("pricing b")
    expect(logs).not_to_contain_text("no price")


def test_aStateWaitingForACallback_showsItsToken_andSendSuccessEndsIt(
    new_page: Callable[..., Page], alice: Tenant, story: str
) -> None:
    """Issue 23: a callback task's state is drawn waiting (not running); its panel holds the
    task token, a Send heartbeat button that keeps it waiting, and a Send success dialog that
    refuses bad JSON and sends good JSON."""
    execution_id = start(alice, story, "approval", {"order": 9})
    page = new_page()
    sign_in(page, alice.token, alice.name)
    page.goto(f"/ui/executions/{execution_id}")
    expect(page.get_by_test_id("execution-status")).to_have_text("RUNNING")
    ask = node(page, "execution-graph", "Ask")
    deadline = time.monotonic() + 30
    while ask.get_attribute("data-status") != "waiting":  # the history is recorded async
        assert time.monotonic() < deadline, "Ask never drawn waiting"
        page.reload()
        time.sleep(0.5)
    expect(page.get_by_test_id("waiting-banner")).to_contain_text("Ask")
    ask.click()
    panel = page.get_by_test_id("task-callback")
    token = panel.get_by_test_id("task-token").input_value()
    assert token.count(".") == 1 and len(token) > 40
    panel.get_by_test_id("send-heartbeat").click()
    expect(panel.get_by_test_id("heartbeat-sent")).to_contain_text(
        re.compile(r"Heartbeat sent at \d\d:\d\d:\d\d; the heartbeat clock restarts")
    )
    panel.get_by_test_id("send-success").click()
    dialog = page.get_by_test_id("success-dialog")
    set_editor_text(page, '{"approved": tru', dialog.get_by_test_id("editor"))
    expect(dialog.get_by_test_id("callback-send")).to_be_disabled()
    set_editor_text(page, '{"approved": true}', dialog.get_by_test_id("editor"))
    dialog.get_by_test_id("callback-send").click()
    wait_status(page, "SUCCEEDED")
    assert alice.client.execution(execution_id).output == {"order": 9, "answer": {"approved": True}}
    # the token is used: a second answer is refused with the reason
    with pytest.raises(Conflict, match="SUCCEEDED"):
        alice.client.send_task_success(token, 1)


def test_stopButton_abortsARunningExecution(
    new_page: Callable[..., Page], alice: Tenant, story: str
) -> None:
    execution_id = start(alice, story, "slow", {})
    page = new_page()
    sign_in(page, alice.token, alice.name)
    page.goto(f"/ui/executions/{execution_id}")
    expect(page.get_by_test_id("execution-status")).to_have_text("RUNNING")
    expect(page.get_by_test_id("redrive")).to_have_count(0)
    page.get_by_test_id("stop").click()
    page.get_by_test_id("confirm-yes").click()
    wait_status(page, "ABORTED", timeout_s=30)
    assert alice.client.execution(execution_id).status == "ABORTED"
    expect(page.get_by_test_id("stop")).to_have_count(0)
