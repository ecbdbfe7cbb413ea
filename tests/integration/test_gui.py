"""The web GUI (issue 14) in a real browser, around apps and who may see them: signing in;
creating an app in the editor (validated as typed, deployed with progress, drawn, invoked,
undeployed); the apps list and an app's page; what a second user sees of the first's app
and execution; refused uploads; the cluster page; unknown routes; a narrow window. The
pages of executions (invoke, timeline, failure, redrive, callbacks, stop) are in
``test_gui_executions.py``.

Playwright drives Debian's Chromium, headless, against the suite's real stack behind nginx
(``cluster_config.gateway_url``), through the ``data-testid``s of the GUI contract only. The
fixtures (the browser, the users, alice's deployed ``story`` app, ``new_page``) are in
``gui_fixtures.py``, the steps shared with the other GUI modules in ``gui_support.py``."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import requests
from playwright.sync_api import Page, expect
from sand.client import SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig

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

NARROW = {"width": 375, "height": 800}
# Validation runs as the user types (debounced ~400 ms) and answers in well under a second on
# a quiet machine; under make test's parallel phase it once took more than 5 s ("checking…").
VALIDATION_S = 15

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


# --- helpers -------------------------------------------------------------------------------------
def editor_text(page: Page) -> str:
    lines = page.get_by_test_id("editor").locator(".cm-line").all_inner_texts()
    return "\n".join(lines)


def open_file(page: Page, path: str) -> None:
    page.get_by_test_id(f"file-tab-{path}").click()


def expect_apps_loaded(page: Page) -> None:
    """The apps list has loaded: its table, or the GUI's word that there are no apps."""
    table = page.get_by_test_id("apps-table")
    expect(table.or_(page.get_by_text("No applications yet"))).to_be_visible()


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


# --- the apps list and an app's page -------------------------------------------------------------
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
