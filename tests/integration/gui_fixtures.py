"""The fixtures of the browser tests of the web GUI (issue 14): a plugin that
``test_gui.py`` and ``test_gui_executions.py`` load with ``pytest_plugins``, not a module they
import. A fixture imported into two modules is set up once per module: the session's
Chromium would start twice, and Playwright's sync API allows one instance per thread. A
plugin's fixtures are set up once for all (``browser``: once per session; ``story``, a
module's, once per module that uses it). Like any plugin's, they are visible to every test
once loaded; a module that defines a fixture of the same name (``test_gui_triggers.py``'s
``alice``) keeps its own.

Users: ``alice`` builds, deploys, runs and steers apps; ``bob`` must see none of it; the
admin's token (from the cluster fixture) signs in too. Names are fresh on every run (the
suite's Cassandra keeps its data between runs). A failing test leaves a screenshot, the
page's HTML and the browser's console in ``build/gui-failures/`` (``new_page``)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright
from sand.client import SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

from tests.integration.gui_support import CHROMIUM, CHROMIUM_ARGS, DESKTOP, FAILURES
from tests.integration.tenants import Tenant, make_tenant

# --- the app alice deploys with the API for the tests that need one deployed ---------------------
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
    """Alice's app of ``STORY_FILES`` (``main`` succeeds through a Parallel, ``failing``
    fails in its ``Flaky`` Task the first time, ``slow`` runs a minute; ``sibling``,
    ``items`` and ``approval`` as ``STORY_MANIFEST`` says), deployed with the API on the
    process backend; its name. Module-scoped: each module that uses it deploys a copy of
    its own, undeployed when the module is done."""
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
