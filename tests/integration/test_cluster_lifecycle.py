"""`sand up` / `sand status` / `sand down` against the real services."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import docker
import pytest
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

from tests.integration.conftest import (
    config_file_of,
    make_config,
    one_start_at_a_time,
    our_processes,
)

EXPECTED = {
    "redis",
    "dockerd",
    "kafka",
    "cassandra",
    "host-agent",
    "frontend-1",
    "frontend-2",
    "nginx",
}


@pytest.mark.timeout(600)
def test_up_reachesAllHealthy_everyServiceHasPidAndAddress(cluster: Supervisor) -> None:
    """After up, every service of the brief runs, answers its health probe and has an address."""
    statuses = {s.name: s for s in cluster.status()}
    assert set(statuses) == EXPECTED
    for status in statuses.values():
        assert status.healthy, f"{status.name}: {status.detail}"
        assert status.pid is not None and status.pid > 1
        assert status.rss_mb is not None and status.rss_mb > 1
        assert status.address


@pytest.mark.timeout(120)
def test_up_again_startsNothing(cluster: Supervisor) -> None:
    """A second up on a running cluster leaves every process as it is."""
    before = {s.name: s.pid for s in cluster.status()}
    started = cluster.up()
    assert all(s.already_running for s in started)
    assert {s.name: s.pid for s in started} == before


@pytest.mark.timeout(120)
def test_up_endsWithTheGuiAddress_andHowToSignIn(
    cluster: Supervisor, cluster_config: ClusterConfig
) -> None:
    """Issue 24: `make run` (whose `sand up` prints these) did not say where the GUI is. The
    address it prints serves the GUI; the file it names holds a token the gateway takes."""
    import requests
    from click.testing import CliRunner
    from sand.cli import cli

    result = CliRunner(mix_stderr=False).invoke(
        cli, ["up", "--config", str(config_file_of(cluster_config))]
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    gui = f"{cluster_config.gateway_url}/ui/"
    token_file = cluster_config.admin_token_file
    assert f"web GUI: {gui} (sign in with a token: the admin's is in {token_file})" in (
        result.stderr
    )
    assert f"to sign in: sand login < {token_file}" in result.stderr
    page = requests.get(gui, timeout=5)
    assert page.status_code == 200 and "<title>" in page.text
    me = requests.get(
        f"{cluster_config.gateway_url}/v1/whoami",
        headers={"Authorization": f"Bearer {token_file.read_text().strip()}"},
        timeout=5,
    )
    assert me.status_code == 200, me.text


@pytest.mark.timeout(120)
def test_gateway_routesToBothFrontends(cluster: Supervisor, cluster_config: ClusterConfig) -> None:
    """nginx spreads requests over the frontends (each answers with its own port)."""
    import requests

    seen = set()
    for _ in range(20):
        response = requests.get(f"{cluster_config.gateway_url}/health", timeout=5)
        assert response.status_code == 200
        seen.add(response.json()["port"])
    assert seen == set(cluster_config.ports.frontends)


@pytest.mark.timeout(120)
def test_dockerd_hasSandboxBaseImageWithPython(
    cluster: Supervisor, cluster_config: ClusterConfig
) -> None:
    """The managed engine holds the locally built base image and it runs Python 3."""
    client = docker.DockerClient(base_url=cluster_config.docker_url)
    try:
        output = client.containers.run(
            cluster_config.base_image,
            ["python3", "-c", "import json, sys; print(json.dumps(sys.version_info[:2]))"],
            remove=True,
            network_mode="none",
        )
        assert json.loads(output) == [3, 11]
    finally:
        client.close()


@pytest.mark.timeout(600)
def test_statusCli_printsEveryServiceAndExitsZero(
    cluster: Supervisor, cluster_config: ClusterConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sand status --json` lists all services healthy and exits 0."""
    from click.testing import CliRunner
    from sand.cli import cli

    monkeypatch.setenv("SAND_STATE_DIR", str(cluster_config.state_dir))
    ports = cluster_config.ports
    for section, values in {
        "KAFKA_PORT": ports.kafka,
        "KAFKA_CONTROLLER_PORT": ports.kafka_controller,
        "CASSANDRA_CQL_PORT": ports.cassandra_cql,
        "CASSANDRA_STORAGE_PORT": ports.cassandra_storage,
        "CASSANDRA_JMX_PORT": ports.cassandra_jmx,
        "FRONTEND_PORTS": ",".join(str(p) for p in ports.frontends),
        "HOST_AGENT_PORT": ports.host_agent,
        "NGINX_PORT": ports.nginx,
    }.items():
        monkeypatch.setenv(f"SAND_{section}", str(values))
    result = CliRunner().invoke(cli, ["status", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert {row["name"] for row in rows} == EXPECTED
    assert all(row["healthy"] for row in rows)


@pytest.mark.timeout(900)
def test_down_leavesNoProcess_thenUpAgainIsHealthy(
    cluster: Supervisor, cluster_config: ClusterConfig
) -> None:
    """down stops every process of ours (no stray helper either); up brings all back."""
    cluster.down()
    assert our_processes(cluster_config) == []
    assert all(s.pid is None for s in cluster.status())
    with one_start_at_a_time():
        cluster.up()
    assert all(s.healthy for s in cluster.status())


@pytest.mark.timeout(300)
def test_up_portInUse_namesPortAndServiceAndStartsNothing(tmp_path: Path) -> None:
    """A port held by someone else: up fails naming the port and service, leaving nothing behind."""
    # below the kernel's ephemeral range (32768-60999): an outgoing connection of any other
    # test could hold a port in that range for a moment and make the check name it instead
    config = make_config(
        tmp_path / "state",
        nginx={"port": 31080},
        host_agent={"port": 31090},
        frontend={"ports": [31081, 31082]},
        kafka={"port": 31092, "controller_port": 31093},
        cassandra={"cql_port": 31042, "storage_port": 31000, "jmx_port": 31199},
    )
    holder = socket.socket()
    holder.bind(("127.0.0.1", 31080))
    holder.listen()
    try:
        from sand.cluster.supervisor import StartError

        with pytest.raises(StartError) as caught:
            Supervisor(config).up()
        assert caught.value.service == "nginx"
        assert "port 31080 is already in use" in str(caught.value)
        assert our_processes(config) == []
    finally:
        holder.close()
