"""The CLI against the real stack: a grain that fails to import fails only the workflows
that reach it (its worker stays up); mistyped app and workflow names get a suggestion;
--json output and refusals as JSON."""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from sand.cli import cli
from sand.client import SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

pytestmark = pytest.mark.integration

APP = "half-broken"


@pytest.fixture(scope="module")
def client(cluster: Supervisor, cluster_config: ClusterConfig) -> SandClient:
    return SandClient(cluster_config.gateway_url, token=admin_token(cluster_config), timeout_s=120)


@pytest.fixture(scope="module", params=["process", "docker"])
def half_broken(
    request: pytest.FixtureRequest, client: SandClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """An app with a grain whose import fails ('broken', used by workflow 'bad') and one
    that is fine ('fine', used by 'main'), deployed on each sandbox backend in turn."""
    root = tmp_path_factory.mktemp("apps") / APP
    files = {
        "app.yaml": f"""\
            name: {APP}
            grains: {{fine: fine.py, broken: broken.py}}
            workflows: {{main: main.yaml, bad: bad.yaml}}
            """,
        "fine.py": "def handle(event, context):\n    return {'fine': event}\n",
        "broken.py": "import no_such_module_for_sand\n\ndef handle(event, context):\n"
        "    return event\n",
        "main.yaml": "entry: fine\ngrains: {fine: {}}\n",
        "bad.yaml": "entry: broken\ngrains: {broken: {}}\n",
    }
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))
    client.deploy(root, backend=request.param)
    yield APP
    client.undeploy(APP)


def sand(cluster_config: ClusterConfig, *args: str) -> Result:
    env = {"SAND_TOKEN": admin_token(cluster_config), "SAND_URL": cluster_config.gateway_url}
    return CliRunner(mix_stderr=False, env=env).invoke(cli, list(args))


@pytest.mark.timeout(180)
def test_grainThatDoesNotImport_failsOnlyItsWorkflows_workerStaysUp(
    client: SandClient, half_broken: str
) -> None:
    """Each execution reaching the broken grain fails with States.Runtime naming the grain
    and the import error; the other workflow succeeds; the worker says it once at its start
    and is not restarted (the line does not come back with each event)."""

    def attempt() -> None:
        failed = client.invoke(half_broken, {}, workflow="bad")
        assert (failed.status, failed.error) == ("FAILED", "States.Runtime"), failed.cause
        assert "grain 'broken' cannot run" in (failed.cause or "")
        assert "ModuleNotFoundError: No module named 'no_such_module_for_sand'" in (
            failed.cause or ""
        )
        fine = client.invoke(half_broken, {"n": 1})
        assert (fine.status, fine.output) == ("SUCCEEDED", {"fine": {"n": 1}})

    attempt()
    time.sleep(1)
    said = client.logs(half_broken).count("grain 'broken' cannot run")
    assert said >= 1
    for _ in range(3):
        attempt()
    time.sleep(1)
    logs = client.logs(half_broken)
    assert logs.count("grain 'broken' cannot run") == said, logs
    assert "restarting" not in logs


@pytest.mark.timeout(120)
def test_cli_mistypedNames_getASuggestion(cluster_config: ClusterConfig, half_broken: str) -> None:
    """On the real server: an unknown app names the closest deployed one, an unknown
    workflow the closest of the app's workflows."""
    app = sand(cluster_config, "app", "show", "half-brokn")
    assert app.exit_code == 2
    assert f"no application 'half-brokn'; did you mean '{APP}'?" in app.stderr
    workflow = sand(cluster_config, "invoke", APP, "--workflow", "mian")
    assert workflow.exit_code == 2
    assert f"application '{APP}' has no workflow 'mian'; did you mean 'main'?" in workflow.stderr


@pytest.mark.timeout(120)
def test_cli_json_againstTheCluster(cluster_config: ClusterConfig, half_broken: str) -> None:
    """--json: apps, app show and invoke print one JSON document; a refusal is JSON on
    stderr with the HTTP status."""
    listed = sand(cluster_config, "apps", "--json")
    assert listed.exit_code == 0, listed.stderr
    assert APP in [app["name"] for app in json.loads(listed.stdout)]
    shown = json.loads(sand(cluster_config, "app", "show", APP, "--json").stdout)
    assert set(shown["workflows"]) == {"main", "bad"}
    invoked = sand(cluster_config, "invoke", APP, "--workflow", "bad", "--json")
    assert invoked.exit_code == 1
    document = json.loads(invoked.stdout)
    assert (document["status"], document["error"]) == ("FAILED", "States.Runtime")
    refused = sand(cluster_config, "logs", "zzzz-nothing", "--json")
    assert refused.exit_code == 2 and refused.stdout == ""
    assert json.loads(refused.stderr)["error"]["status"] == 404
