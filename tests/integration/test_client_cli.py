"""The typed client and the execution commands against the real stack (not the twin): the
server's answers parse into the records, its refusals arrive as the exception classes with
its message, and `sand stop` / `sand redrive` print them and exit as documented."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sand.cli import cli
from sand.client import Conflict, Execution, NotFound, SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

STEER = Path(__file__).resolve().parent / "apps" / "steer"  # slow, then after
UNKNOWN = "0" * 32


@pytest.fixture(scope="module")
def client(cluster: Supervisor, cluster_config: ClusterConfig) -> Iterator[SandClient]:
    client = SandClient(cluster_config.gateway_url, token=admin_token(cluster_config))
    client.deploy(STEER, backend="process")
    try:
        yield client
    finally:
        client.undeploy("steer")


def sand(client: SandClient, cluster_config: ClusterConfig, *args: str) -> Result:
    env = {"SAND_URL": client.base_url, "SAND_TOKEN": admin_token(cluster_config)}
    return CliRunner(mix_stderr=False).invoke(cli, list(args), env=env)


def test_stop_fromTheCli_abortsARunningExecution_andTheClientReadsIt(
    client: SandClient, cluster_config: ClusterConfig
) -> None:
    """An async start is a RUNNING Execution; `sand stop --cause` ends it ABORTED (exit 0),
    the typed document says so; a second stop exits 1 with the server's 409 naming the
    status, and raises Conflict from the client."""
    started = client.invoke("steer", {"sleep_s": 40}, workflow="main", wait=False)
    assert isinstance(started, Execution) and started.status == "RUNNING"
    stopped = sand(client, cluster_config, "stop", started.execution_id, "--cause", "[from] CLI")
    assert stopped.exit_code == 0, stopped.stderr
    assert f"stopped {started.execution_id}: ABORTED (States.Aborted: [from] CLI)" in (
        stopped.stderr
    )
    doc = client.execution(started.execution_id)
    assert (doc.status, doc.error, doc.cause, doc.app, doc.workflow) == (
        "ABORTED",
        "States.Aborted",
        "[from] CLI",
        "steer",
        "main",
    )
    assert doc.finished_ms is not None and doc.started_ms is not None
    assert doc.finished_ms >= doc.started_ms
    again = sand(client, cluster_config, "stop", started.execution_id)
    assert again.exit_code == 2
    assert "HTTP 409" in again.stderr and "ABORTED" in again.stderr
    with pytest.raises(Conflict) as refused:
        client.stop(started.execution_id)
    assert refused.value.status == 409
    assert refused.value.server_message is not None and "ABORTED" in refused.value.server_message


def test_unknownExecution_isNotFound_namingTheId(
    client: SandClient, cluster_config: ClusterConfig
) -> None:
    """The client raises NotFound with the server's message naming the id; the commands exit
    1 and print it."""
    for call in (client.execution, client.stop, client.redrive):
        with pytest.raises(NotFound) as missing:
            call(UNKNOWN)
        assert missing.value.server_message is not None
        assert UNKNOWN in missing.value.server_message, missing.value
    for command in ("stop", "redrive"):
        result = sand(client, cluster_config, command, UNKNOWN)
        assert result.exit_code == 2, result.stderr
        assert UNKNOWN in result.stderr and "HTTP 404" in result.stderr


def test_syncInvoke_isTheTypedResult(client: SandClient) -> None:
    """A finished synchronous call parses into SUCCEEDED with its output, and the execution's
    document agrees (times set, same output)."""
    done = client.invoke("steer", {"sleep_s": 0}, workflow="main")
    assert (done.status, done.existing) == ("SUCCEEDED", False)
    doc = client.execution(done.execution_id)
    assert (doc.status, doc.output, doc.app) == ("SUCCEEDED", done.output, "steer")
    assert doc.finished_ms is not None
