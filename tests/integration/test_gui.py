"""The web GUI (issue 14) in a real browser: Playwright drives Debian's Chromium, headless,
against the suite's real stack behind nginx (``cluster_config.gateway_url``), through the
``data-testid``s of the GUI contract only.

Users: ``alice`` builds, deploys, runs and steers apps; ``bob`` must see none of it; the
admin's token (from the cluster fixture) signs in too. Names are fresh on every run (the
suite's Cassandra keeps its data between runs). A failing test leaves a screenshot, the
page's HTML and the browser's console in ``build/gui-failures/``."""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import Browser, Locator, Page, Playwright, expect, sync_playwright
from sand.client import Conflict, SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

from tests.integration.tenants import Tenant, make_tenant

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
FAILURES = ROOT / "build" / "gui-failures"
CHROMIUM = "/usr/bin/chromium"  # Debian's package, installed by deploy/setup.sh
# --no-sandbox: the suite runs as root; the others keep Chromium off this closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DESKTOP = {"width": 1280, "height": 800}
NARROW = {"width": 375, "height": 800}
# Validation runs as the user types (debounced ~400 ms) and answers in well under a second on
# a quiet machine; under make test's parallel phase it once took more than 5 s ("checking…").
VALIDATION_S = 15
# Assertions wait as long as actions do (the context's default, 15 s), not Playwright's 5 s:
# on a loaded machine (three test clusters and Chromium on two cores) loading elkjs and laying
# out a graph took longer than 5 s in CI. test_gui_triggers imports this module.
expect.set_options(timeout=15_000)
TERMINAL = ("SUCCEEDED", "FAILED", "ABORTED")

# --- the app alice deploys with the API for the tests that run executions ------------------------
STORY_MANIFEST = """\
name: {name}
grains:
  greet: grains/greet.py
  shout: grains/shout.py
  flaky: grains/flaky.py
  slow: grains/slow.py
  price: grains/price.py
  ask: grains/ask.py
workflows:
  main: workflows/main.json
  failing: workflows/failing.json
  slow: workflows/slow.json
  sibling: workflows/sibling.json  # Flaky fails the Parallel while Nap still sleeps
  items: workflows/items.json      # one Map item fails (sku "b"), its siblings log alike
  approval: workflows/approval.json  # Ask waits for a callback with its task token
limits:
  timeout_s: 120                 # the slow grain runs a minute, unless stopped
"""
STORY_FILES = {
    "workflows/main.json": json.dumps(
        {
            "StartAt": "Greet",
            "States": {
                "Greet": {"Type": "Task", "Resource": "greet", "Next": "Fan"},
                "Fan": {
                    "Type": "Parallel",
                    "Branches": [
                        {
                            "StartAt": "Shout",
                            "States": {"Shout": {"Type": "Task", "Resource": "shout", "End": True}},
                        },
                        {
                            "StartAt": "Mark",
                            "States": {"Mark": {"Type": "Pass", "Result": "marked", "End": True}},
                        },
                    ],
                    "ResultPath": "$.fan",
                    "Next": "Done",
                },
                "Done": {"Type": "Succeed"},
            },
        },
        indent=2,
    ),
    "workflows/failing.json": json.dumps(
        {
            "StartAt": "Prepare",
            "States": {
                "Prepare": {
                    "Type": "Pass",
                    "Result": True,
                    "ResultPath": "$.prepared",
                    "Next": "Flaky",
                },
                "Flaky": {"Type": "Task", "Resource": "flaky", "Next": "Done"},
                "Done": {"Type": "Succeed"},
            },
        },
        indent=2,
    ),
    "workflows/sibling.json": json.dumps(
        {
            "StartAt": "Both",
            "States": {
                "Both": {
                    "Type": "Parallel",
                    "Branches": [
                        {
                            "StartAt": "Flaky",
                            "States": {"Flaky": {"Type": "Task", "Resource": "flaky", "End": True}},
                        },
                        {
                            "StartAt": "Nap",
                            "States": {"Nap": {"Type": "Task", "Resource": "slow", "End": True}},
                        },
                    ],
                    "End": True,
                }
            },
        },
        indent=2,
    ),
    "workflows/items.json": json.dumps(
        {
            "StartAt": "PriceItems",
            "States": {
                "PriceItems": {
                    "Type": "Map",
                    "ItemsPath": "$.items",
                    "ItemProcessor": {
                        "StartAt": "Price",
                        "States": {"Price": {"Type": "Task", "Resource": "price", "End": True}},
                    },
                    "End": True,
                }
            },
        },
        indent=2,
    ),
    "workflows/approval.json": json.dumps(
        {
            "StartAt": "Ask",
            "States": {
                "Ask": {
                    "Type": "Task",
                    "Resource": "ask.waitForTaskToken",
                    "TimeoutSeconds": 300,
                    "ResultPath": "$.answer",
                    "End": True,
                }
            },
        },
        indent=2,
    ),
    "workflows/slow.json": json.dumps(
        {"StartAt": "Nap", "States": {"Nap": {"Type": "Task", "Resource": "slow", "End": True}}},
        indent=2,
    ),
    "grains/greet.py": (
        "def handle(event, context):\n"
        "    print(f\"greeting {event['name']}\", flush=True)\n"
        '    return {"name": event["name"], "greeting": f"Hello, {event[\'name\']}"}\n'
    ),
    "grains/shout.py": (
        'def handle(event, context):\n    return {"shout": event["greeting"].upper() + "!"}\n'
    ),
    # Fails the first time it runs for an execution, succeeds when redriven.
    "grains/flaky.py": (
        "def handle(event, context):\n"
        '    key = f"ran-{context.execution_id}"\n'
        "    runs = context.data.get(key, 0) + 1\n"
        "    context.data.put(key, runs)\n"
        "    if runs == 1:\n"
        '        raise RuntimeError("the first run always fails")\n'
        '    return {"flaky_runs": runs}\n'
    ),
    "grains/price.py": (
        "def handle(event, context):\n"
        "    context.logger.info(f\"pricing {event['sku']}\")\n"
        "    print(f\"printed {event['sku']}\", flush=True)\n"
        "    if event['sku'] == 'b':\n"
        "        raise ValueError(f\"no price for {event['sku']}\")\n"
        "    return {'sku': event['sku'], 'price': 3}\n"
    ),
    "grains/ask.py": 'def handle(event, context):\n    return {"asked": True}\n',
    "grains/slow.py": (
        "import time\n\n\ndef handle(event, context):\n"
        "    time.sleep(event.get('nap_s', 60))\n    return event\n"
    ),
}

# --- what alice types into the GUI's editor when she creates an app ------------------------------
NEW_MANIFEST = """\
name: {name}
grains:
  greet: grains/greet.py
workflows:
  main: workflows/main.yaml
"""
NEW_GRAIN = 'def handle(event, context):\n    return {"greeting": "Hello, " + event["name"]}\n'
# "Next" names no state: the server's ASL loader refuses it.
BROKEN_WORKFLOW = """\
StartAt: Greet
States:
  Greet:
    Type: Task
    Resource: greet
    Next: Nowhere
"""
FIXED_WORKFLOW = """\
StartAt: Greet
States:
  Greet:
    Type: Task
    Resource: greet
    Next: Done
  Done:
    Type: Succeed
"""


# --- fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def playwright_driver() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="session")
def browser(playwright_driver: Playwright) -> Iterator[Browser]:
    """One headless Debian Chromium for the session (never a browser Playwright downloads)."""
    chromium = playwright_driver.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    yield chromium
    chromium.close()


@pytest.fixture(scope="module")
def admin(cluster: Supervisor, cluster_config: ClusterConfig) -> SandClient:
    return SandClient(cluster_config.gateway_url, token=admin_token(cluster_config), timeout_s=120)


@pytest.fixture(scope="module")
def alice(admin: SandClient, cluster_config: ClusterConfig) -> Tenant:
    return make_tenant(admin, cluster_config, "gui-alice")


@pytest.fixture(scope="module")
def bob(admin: SandClient, cluster_config: ClusterConfig) -> Tenant:
    return make_tenant(admin, cluster_config, "gui-bob")


@pytest.fixture(scope="module")
def story(alice: Tenant, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Alice's app with three workflows (``main`` succeeds through a Parallel, ``failing``
    fails in its ``Flaky`` Task the first time, ``slow`` runs a minute), deployed with the
    API on the process backend; its name."""
    name = f"gui-story-{secrets.token_hex(3)}"
    directory = tmp_path_factory.mktemp("apps") / name
    for path, text in {"app.yaml": STORY_MANIFEST.format(name=name), **STORY_FILES}.items():
        (directory / path).parent.mkdir(parents=True, exist_ok=True)
        (directory / path).write_text(text)
    alice.client.deploy(directory, backend="process")
    yield name
    alice.client.undeploy(name)


@pytest.fixture
def new_page(
    browser: Browser, cluster_config: ClusterConfig, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Page]]:
    """Pages in a fresh browser context per test (nothing kept from other tests: no token,
    no storage), at 1280x800 unless asked. A failed test leaves a screenshot and the HTML of
    each of its pages in build/gui-failures/."""
    contexts = []
    pages: list[Page] = []
    console: list[str] = []
    failed_before = request.session.testsfailed

    def open_page(viewport: dict[str, int] = DESKTOP) -> Page:
        context = browser.new_context(base_url=cluster_config.gateway_url, viewport=viewport)  # type: ignore[arg-type]
        context.set_default_timeout(15_000)
        contexts.append(context)
        page = context.new_page()
        page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
        page.on("pageerror", lambda error: console.append(f"page error: {error}"))
        pages.append(page)
        return page

    yield open_page
    if request.session.testsfailed > failed_before:
        FAILURES.mkdir(parents=True, exist_ok=True)
        (FAILURES / f"{request.node.name}.console.txt").write_text("\n".join(console) + "\n")
        for number, page in enumerate(pages):
            stem = FAILURES / f"{request.node.name}-{number}"
            try:
                page.screenshot(path=f"{stem}.png", full_page=True)
                Path(f"{stem}.html").write_text(page.content())
            except Exception as exc:  # the page may be gone; the test's own failure matters
                print(f"no screenshot of page {number}: {exc}")
    for context in contexts:
        context.close()


# --- helpers -------------------------------------------------------------------------------------
def sign_in(page: Page, token: str, user: str) -> None:
    page.goto("/ui/signin")
    page.get_by_test_id("signin-token").fill(token)
    page.get_by_test_id("signin-submit").click()
    expect(page.get_by_test_id("whoami-user")).to_have_text(user)


def set_editor_text(page: Page, text: str, editor: Locator | None = None) -> None:
    """Replace the whole text of a CodeMirror editor as a user would: click, select all, type
    (``insert_text`` sends the characters as input events, without the editor's auto-indent
    turning typed newlines into extra spaces)."""
    target = editor if editor is not None else page.get_by_test_id("editor")
    target.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(text)


def editor_text(page: Page) -> str:
    lines = page.get_by_test_id("editor").locator(".cm-line").all_inner_texts()
    return "\n".join(lines)


def fill_json_input(page: Page, text: str) -> None:
    """The invoke panel's input is a CodeMirror or a textarea (the contract allows both)."""
    field = page.get_by_test_id("invoke-input")
    tag = field.evaluate("element => element.tagName.toLowerCase()")
    if tag in ("textarea", "input"):
        field.fill(text)
    else:
        editable = field.locator(".cm-content")
        set_editor_text(page, text, editable if editable.count() else field)


def open_file(page: Page, path: str) -> None:
    page.get_by_test_id(f"file-tab-{path}").click()


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


def expect_apps_loaded(page: Page) -> None:
    """The apps list has loaded: its table, or the GUI's word that there are no apps."""
    table = page.get_by_test_id("apps-table")
    expect(table.or_(page.get_by_text("No applications yet"))).to_be_visible()


def node(page: Page, graph: str, state: str) -> Locator:
    return page.get_by_test_id(graph).get_by_test_id(f"node-{state}")


def start(tenant: Tenant, app: str, workflow: str, payload: Any) -> str:
    return tenant.client.invoke(app, payload, workflow=workflow, wait=False).execution_id


def wait_done(tenant: Tenant, execution_id: str, timeout_s: float = 60) -> str:
    give_up = time.monotonic() + timeout_s
    while time.monotonic() < give_up:
        status = tenant.client.execution(execution_id).status
        if status in TERMINAL:
            return status
        time.sleep(0.3)
    raise AssertionError(f"execution {execution_id} still running after {timeout_s} s")


# --- sign in -------------------------------------------------------------------------------------
def test_signIn_badTokenIsRefused_adminTokenShowsTheUser(
    new_page: Callable[..., Page], admin: SandClient, cluster_config: ClusterConfig
) -> None:
    page = new_page()
    page.goto("/")  # the root redirects to the GUI, which asks for a token
    expect(page).to_have_url(re.compile(r"/ui/"))
    page.goto("/ui/signin")
    page.get_by_test_id("signin-token").fill("sand_not-a-real-token")
    page.get_by_test_id("signin-submit").click()
    expect(page.get_by_test_id("signin-error")).not_to_be_empty()
    expect(page.get_by_test_id("whoami-user")).to_have_count(0)

    sign_in(page, admin_token(cluster_config), admin.whoami().user)
    for link in ("nav-apps", "nav-executions", "nav-cluster"):
        expect(page.get_by_test_id(link)).to_be_visible()
    page.get_by_test_id("signout").click()
    expect(page.get_by_test_id("whoami-user")).to_have_count(0)
    page.goto("/ui/apps")  # the token is gone: the GUI asks for one again
    expect(page.get_by_test_id("signin-token")).to_be_visible()


# --- create, validate as typed, deploy with progress, graph, invoke, undeploy --------------------
def test_createApp_validatesAsTyped_deploysWithProgress_invokes_undeploys(
    new_page: Callable[..., Page], alice: Tenant
) -> None:
    name = f"gui-new-{secrets.token_hex(3)}"
    page = new_page()
    sign_in(page, alice.token, alice.name)
    page.get_by_test_id("nav-apps").click()
    page.get_by_test_id("new-app").click()
    expect(page).to_have_url(re.compile(r"/ui/apps/new"))
    page.get_by_test_id("app-name").fill(name)
    # The template's files are there, with a grain to edit.
    for path in ("app.yaml", "workflows/main.yaml"):
        expect(page.get_by_test_id(f"file-tab-{path}")).to_be_visible()
    expect(page.locator('[data-testid^="file-tab-grains/"]').first).to_be_visible()
    status = page.get_by_test_id("validation-status")
    expect(status).to_have_text("valid", timeout=VALIDATION_S * 1000)  # the template as it is

    open_file(page, "app.yaml")
    set_editor_text(page, NEW_MANIFEST.format(name=name))
    if page.get_by_test_id("file-tab-grains/greet.py").count() == 0:
        page.get_by_test_id("add-file").click()
        page.get_by_test_id("add-file-path").fill("grains/greet.py")
        page.get_by_test_id("add-file-confirm").click()
    open_file(page, "grains/greet.py")
    set_editor_text(page, NEW_GRAIN)
    expect(page.get_by_test_id("editor")).to_contain_text("Hello, ")
    # Python highlighting: CodeMirror marks the keyword 'def' as a token of its own.
    expect(page.get_by_test_id("editor").locator("span", has_text="def").first).to_be_visible()

    # A workflow whose Next names no state: the server's own validation says so, as typed.
    open_file(page, "workflows/main.yaml")
    set_editor_text(page, BROKEN_WORKFLOW)
    expect(status).to_have_text("1 problem", timeout=VALIDATION_S * 1000)
    problem = page.get_by_test_id("problem")
    expect(problem).to_have_count(1)
    expect(problem).to_have_text(
        "workflows/main.yaml: States.Greet.Next: Next 'Nowhere' names no state in this scope"
    )
    # ... and inline in the editor of the open file (a CodeMirror lint diagnostic).
    editor = page.locator(".cm-editor", has=page.get_by_test_id("editor"))
    expect(
        editor.locator(".cm-lintRange-error, .cm-lintPoint-error, .cm-lint-marker-error").first
    ).to_be_visible(timeout=VALIDATION_S * 1000)
    expect(page.get_by_test_id("deploy")).to_be_visible()

    set_editor_text(page, FIXED_WORKFLOW)
    expect(status).to_have_text("valid", timeout=VALIDATION_S * 1000)
    expect(problem).to_have_count(0)
    assert "Next: Done" in editor_text(page)

    # Deploy on the process backend: progress lines, then the version.
    page.get_by_test_id("deploy-backend").select_option("process")
    page.get_by_test_id("deploy").click()
    result = page.get_by_test_id("deploy-result")
    expect(result).to_have_text("deployed version 1", timeout=120_000)
    phases = page.get_by_test_id("deploy-progress").get_by_test_id("deploy-phase")
    assert phases.count() >= 1, "no deploy-phase line was shown"
    assert alice.client.app(name)["name"] == name  # the server has it, as alice's

    # The app page: its workflow drawn with a node per state.
    page.goto(f"/ui/apps/{name}")
    expect(page.get_by_test_id("app-title")).to_contain_text(name)
    for state in ("Greet", "Done"):
        expect(node(page, "workflow-graph", state)).to_be_visible()
    expect(page.get_by_test_id("workflow-graph").locator('[data-testid^="node-"]')).to_have_count(2)

    # Invoke: sync answers the output in the page.
    fill_json_input(page, '{"name": "Ada"}')
    page.get_by_test_id("invoke-mode").select_option("sync")
    page.get_by_test_id("invoke-submit").click()
    expect(page.get_by_test_id("invoke-result")).to_contain_text("Hello, Ada", timeout=60_000)

    # Undeploy, confirmed: the app leaves the list and the server.
    page.get_by_test_id("undeploy").click()
    page.get_by_test_id("confirm-yes").click()
    expect(page).to_have_url(re.compile(r"/ui/apps/?$"), timeout=60_000)  # back on the list
    expect_apps_loaded(page)
    expect(page.get_by_test_id(f"app-row-{name}")).to_have_count(0)
    assert name not in {app["name"] for app in alice.client.apps()}


# --- the apps list, invoke checks, timeline and state details ------------------------------------
def test_appsList_andAppPage_showTheDeployedApp_withGroupsInTheGraph(
    new_page: Callable[..., Page], alice: Tenant, story: str
) -> None:
    page = new_page()
    sign_in(page, alice.token, alice.name)
    page.get_by_test_id("nav-apps").click()
    row = page.get_by_test_id(f"app-row-{story}")
    expect(row).to_contain_text("process")  # the backend
    expect(row).to_contain_text("main")  # the default workflow
    row.get_by_role("link", name=story).click()
    expect(page.get_by_test_id("app-title")).to_contain_text(story)
    page.get_by_test_id("workflow-select").select_option("main")
    graph = page.get_by_test_id("workflow-graph")
    for state in ("Greet", "Fan", "Shout", "Mark", "Done"):
        expect(
            graph.get_by_test_id(f"node-{state}").or_(graph.get_by_test_id(f"group-{state}")).first
        ).to_be_visible()
    # The Parallel is a group box holding its branches' states.
    group = graph.get_by_test_id("group-Fan")
    expect(group).to_be_visible()
    expect(group.get_by_test_id("node-Shout")).to_have_count(1)
    expect(group.get_by_test_id("node-Mark")).to_have_count(1)
    page.get_by_test_id("workflow-select").select_option("failing")
    for state in ("Prepare", "Flaky", "Done"):
        expect(node(page, "workflow-graph", state)).to_be_visible()


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
    expect(row).to_contain_text("SUCCEEDED")
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


# --- who sees what -------------------------------------------------------------------------------
def test_secondUser_seesNeitherTheAppNorItsExecution(
    new_page: Callable[..., Page],
    alice: Tenant,
    bob: Tenant,
    story: str,
    cluster_config: ClusterConfig,
) -> None:
    execution_id = start(alice, story, "main", {"name": "Alice"})
    assert wait_done(alice, execution_id) == "SUCCEEDED"
    page = new_page()
    sign_in(page, bob.token, bob.name)
    page.get_by_test_id("nav-apps").click()
    expect_apps_loaded(page)
    expect(page.get_by_test_id(f"app-row-{story}")).to_have_count(0)
    page.get_by_test_id("nav-executions").click()
    page.get_by_test_id("filter-since").select_option("all")
    table = page.get_by_test_id("executions-table")
    expect(table.or_(page.get_by_text("No executions"))).to_be_visible()
    expect(page.get_by_test_id(f"execution-row-{execution_id}")).to_have_count(0)

    # Alice's execution answers bob exactly as one that does not exist.
    def message(some_id: str) -> str:
        answer = requests.get(
            f"{cluster_config.gateway_url}/v1/executions/{some_id}",
            headers={"Authorization": f"Bearer {bob.token}"},
            timeout=30,
        )
        assert answer.status_code == 404, answer.text
        return str(answer.json()["error"])

    missing = "0" * len(execution_id)
    assert message(execution_id) == message(missing).replace(missing, execution_id)
    page.goto(f"/ui/executions/{execution_id}")
    expect(page.get_by_test_id("error-banner")).to_contain_text(message(execution_id))
    expect(page.get_by_test_id("execution-status")).to_have_count(0)
    page.goto(f"/ui/apps/{story}")
    expect(page.get_by_test_id("error-banner")).to_be_visible()
    expect(page.get_by_test_id("app-title")).to_have_count(0)


# --- uploads, cluster, unknown routes, a narrow window -------------------------------------------
def test_uploadOfANonZipOrATooLargeFile_isRefusedWithAMessage(
    new_page: Callable[..., Page], alice: Tenant, tmp_path: Path
) -> None:
    bogus = tmp_path / "notes.zip"
    bogus.write_text("this is not a zip archive\n")
    before = {app["name"] for app in alice.client.apps()}
    page = new_page()
    sign_in(page, alice.token, alice.name)
    page.get_by_test_id("nav-apps").click()
    page.get_by_test_id("upload-app").set_input_files(str(bogus))
    expect(page.get_by_test_id("upload-error")).not_to_be_empty(timeout=30_000)
    assert {app["name"] for app in alice.client.apps()} == before

    # Over the 64 MiB limit of nginx and the frontends: a refusal that says why.
    big = tmp_path / "big.zip"
    with big.open("wb") as out:
        out.truncate(65 * 1024 * 1024)
    page.reload()
    page.get_by_test_id("upload-app").set_input_files(str(big))
    expect(page.get_by_test_id("upload-error")).to_contain_text(
        re.compile(r"too large|exceeds|limit|MiB|MB", re.IGNORECASE), timeout=60_000
    )
    assert {app["name"] for app in alice.client.apps()} == before


def test_clusterPage_listsTheHost_withTheAppsSandboxAndWorkers(
    new_page: Callable[..., Page], alice: Tenant, story: str
) -> None:
    page = new_page()
    sign_in(page, alice.token, alice.name)
    page.get_by_test_id("nav-cluster").click()
    host = page.get_by_test_id("hosts-table").get_by_test_id("host-row-host-1")
    expect(host).to_be_visible()
    sandbox = page.get_by_test_id(f"sandbox-{story}")
    expect(sandbox).to_be_visible()
    for grain in ("greet", "shout", "flaky", "slow"):
        expect(page.get_by_test_id(f"worker-{story}-{grain}").first).to_be_attached()


def test_clusterPage_showsAWorkerWhoseGrainCannotBeImported_asUnhealthy_withWhy(
    new_page: Callable[..., Page], alice: Tenant, tmp_path: Path
) -> None:
    """Issue 24: a worker whose grain cannot be imported runs (each event fails, explained)
    and was drawn green. The cluster page shows it unhealthy, with the import error."""
    name = f"gui-broken-{secrets.token_hex(3)}"
    (tmp_path / "grains").mkdir()
    (tmp_path / "app.yaml").write_text(
        f"name: {name}\ngrains:\n  fine: grains/fine.py\n  broken: grains/broken.py\n"
        "workflows:\n  main: workflows/main.yaml\n"
    )
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows/main.yaml").write_text(
        "entry: fine\ngrains:\n  fine: {next: broken}\n  broken: {}\n"
    )
    (tmp_path / "grains/fine.py").write_text("def handle(event, context):\n    return event\n")
    (tmp_path / "grains/broken.py").write_text(
        "import sand_no_such_module_anywhere\n\n\ndef handle(event, context):\n    return event\n"
    )
    alice.client.deploy(tmp_path, backend="process")
    try:
        page = new_page()
        sign_in(page, alice.token, alice.name)
        page.get_by_test_id("nav-cluster").click()
        broken = page.get_by_test_id(f"worker-{name}-broken")
        deadline = time.monotonic() + 20  # the page shows what the agent saw when it loaded
        while True:
            try:
                expect(broken.locator(".dot")).to_have_class(re.compile(r"\bdot-bad\b"))
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                page.get_by_role("button", name="Refresh").click()
        expect(broken.get_by_test_id("worker-error")).to_contain_text(
            "No module named 'sand_no_such_module_anywhere'"
        )
        fine = page.get_by_test_id(f"worker-{name}-fine")
        expect(fine.locator(".dot")).to_have_class(re.compile(r"\bdot-ok\b"))
        expect(fine.get_by_test_id("worker-error")).to_have_count(0)
    finally:
        alice.client.undeploy(name)


def test_unknownRoute_showsNotFound_andServerErrorsShowTheirMessage(
    new_page: Callable[..., Page], alice: Tenant
) -> None:
    page = new_page()
    sign_in(page, alice.token, alice.name)
    page.goto("/ui/no/such/page")
    expect(page.get_by_test_id("not-found")).to_be_visible()
    missing = f"gui-missing-{secrets.token_hex(3)}"
    page.goto(f"/ui/apps/{missing}")
    expect(page.get_by_test_id("error-banner")).to_contain_text(missing)


def test_narrowWindow_collapsesTheNavigation_andTheExecutionsPageRenders(
    new_page: Callable[..., Page], alice: Tenant, story: str
) -> None:
    page = new_page(NARROW)
    sign_in(page, alice.token, alice.name)
    expect(page.get_by_test_id("nav-executions")).to_be_hidden()  # behind a menu button
    page.get_by_test_id("nav-toggle").click()
    page.get_by_test_id("nav-executions").click()
    expect(page).to_have_url(re.compile(r"/ui/executions"))
    expect(page.get_by_test_id("executions-table")).to_be_visible()
    expect(page.get_by_test_id("filter-status")).to_be_visible()
    # The page itself does not scroll sideways: a wide table scrolls in its own box.
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= NARROW["width"], f"the page is {width} px wide at {NARROW['width']} px"
