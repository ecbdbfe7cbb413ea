"""What every browser test of the web GUI (issue 14) shares, but its fixtures: where the
browser is and how it starts, where a failing test leaves its traces, and the steps a test
takes the same way in each module (sign in, type into an editor, find a node of a drawn
graph, start an execution with the API and wait for its end).

The fixtures are in ``gui_fixtures.py``, a plugin the test modules load (``pytest_plugins``),
so that the session's one Chromium is shared by all of them. ``test_gui_triggers.py`` drives
a Chromium of its own per test and takes only the constants and ``sign_in`` from here."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect

from tests.integration.tenants import Tenant

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
# Assertions wait as long as actions do (the context's default, 15 s), not Playwright's 5 s:
# on a loaded machine (three test clusters and Chromium on two cores) loading elkjs and laying
# out a graph took longer than 5 s in CI. Every GUI test module imports this module, so the
# setting holds for each of them (test_gui_triggers too).
expect.set_options(timeout=15_000)
TERMINAL = ("SUCCEEDED", "FAILED", "ABORTED")


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


def fill_json_input(page: Page, text: str) -> None:
    """The invoke panel's input is a CodeMirror or a textarea (the contract allows both)."""
    field = page.get_by_test_id("invoke-input")
    tag = field.evaluate("element => element.tagName.toLowerCase()")
    if tag in ("textarea", "input"):
        field.fill(text)
    else:
        editable = field.locator(".cm-content")
        set_editor_text(page, text, editable if editable.count() else field)


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
