"""Screenshots of the web GUI's main pages at 1280x800, for the README (docs/screenshots/).

Runs against a stack that is up (`make run`, or `sand up`), in Debian's Chromium driven by
Playwright, as the cluster's admin by default. It deploys the examples it shows when they are
missing (process backend) and runs each once, so that the execution pages have something to
show; it leaves them deployed.

    .venv/bin/python frontend/ui/scripts/screenshots.py            # the local cluster
    .venv/bin/python frontend/ui/scripts/screenshots.py --url http://host:8080 --token-file t
    make screenshots                                               # the same as the first
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect, sync_playwright
from sand.client import SandApiError, SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import load_config

ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 800}
# Example apps shown, with the input of their one run (from their expected.json / input.json).
EXAMPLES = ("hello", "asl-orders")
# In the editor shot: a workflow with a mistake, to show a problem found as it is typed.
BROKEN_WORKFLOW = (
    "StartAt: Hello\nStates:\n  Hello:\n    Type: Task\n    Resource: hello\n    Next: Nowhere\n"
)


def example_input(example: Path) -> Any:
    if (example / "input.json").exists():
        return json.loads((example / "input.json").read_text())
    expected = json.loads((example / "expected.json").read_text())
    first = next(iter(expected.values()))
    return first["input"]


def prepare(client: SandClient) -> dict[str, str]:
    """Deploy the examples that are missing and run each once; the execution id per app."""
    deployed = {app["name"] for app in client.apps()}
    runs = {}
    for name in EXAMPLES:
        example = ROOT / "examples" / name
        if name not in deployed:
            print(f"deploying {name}", file=sys.stderr)
            client.deploy(example, backend="process")
        execution = client.invoke(name, example_input(example))
        runs[name] = execution.execution_id
    return runs


def shoot(page: Page, out: Path, name: str) -> None:
    page.wait_for_load_state("networkidle")
    time.sleep(0.3)  # let the graph layout and transitions settle
    path = out / f"{name}.png"
    page.screenshot(path=str(path))
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="the gateway (nginx) URL; default: the local cluster's")
    parser.add_argument("--token-file", type=Path, help="a file holding the token to sign in with")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args(argv)

    config = load_config()
    url = (args.url or config.gateway_url).rstrip("/")
    token = args.token_file.read_text().strip() if args.token_file else admin_token(config)
    client = SandClient(url, token=token, timeout_s=120)
    try:
        user = client.whoami().user
        runs = prepare(client)
    except SandApiError as exc:
        print(f"error: {url}: {exc}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)

    with sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        context = browser.new_context(base_url=url, viewport=VIEWPORT)  # type: ignore[arg-type]
        context.set_default_timeout(20_000)
        page = context.new_page()

        page.goto("/ui/signin")
        shoot(page, args.out, "signin")
        page.get_by_test_id("signin-token").fill(token)
        page.get_by_test_id("signin-submit").click()
        expect(page.get_by_test_id("whoami-user")).to_have_text(user)

        page.goto("/ui/apps")
        expect(page.get_by_test_id("app-row-hello")).to_be_visible()
        shoot(page, args.out, "apps")

        page.goto("/ui/apps/asl-orders")
        expect(page.get_by_test_id("workflow-graph")).to_be_visible()
        shoot(page, args.out, "app-graph")

        page.goto("/ui/apps/new")
        page.get_by_test_id("app-name").fill("my-app")
        page.get_by_test_id("file-tab-workflows/main.yaml").click()
        page.get_by_test_id("editor").click()
        page.keyboard.press("Control+A")
        page.keyboard.press("Delete")
        page.keyboard.insert_text(BROKEN_WORKFLOW)
        expect(page.get_by_test_id("problem").first).to_be_visible()
        shoot(page, args.out, "editor")

        page.goto("/ui/executions")
        expect(page.get_by_test_id("executions-table")).to_be_visible()
        shoot(page, args.out, "executions")

        page.goto(f"/ui/executions/{runs['asl-orders']}")
        expect(page.get_by_test_id("execution-graph")).to_be_visible()
        expect(page.get_by_test_id("timeline-row").first).to_be_visible()
        shoot(page, args.out, "execution")

        page.goto("/ui/cluster")
        expect(page.get_by_test_id("host-row-host-1")).to_be_visible()
        shoot(page, args.out, "cluster")
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
