"""A host seen on its own (single host, small real processes): its services, its sandboxes'
pids by app, and killing all of them while the shared services live on."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import psutil
import pytest
from sand.cluster import fleet
from sand.cluster.config import ClusterConfig, load_config
from sand.cluster.specs import ServiceSpec
from sand.cluster.supervisor import Supervisor

# An "agent" that starts one sandbox process of app "thumbs", as the process backend does.
_AGENT = (
    "import os, subprocess, time; "
    "subprocess.Popen(['sleep', '60'], env={**os.environ, 'SAND_APP': 'thumbs'}); "
    "time.sleep(60)"
)


def _config(tmp_path: Path) -> ClusterConfig:
    overrides = {
        "cluster": {"state_dir": str(tmp_path), "stop_timeout_s": 2},
        "docker": {"mode": "off"},
    }
    return load_config(env={}, overrides=overrides)


def _spec(config: ClusterConfig, name: str, code: str, host: str | None) -> ServiceSpec:
    return ServiceSpec(
        name=name,
        argv=(sys.executable, "-c", code),
        address="-",
        log=config.logs_dir / f"{name}.log",
        health=lambda: None,
        host_id=host,
    )


def _cluster(tmp_path: Path) -> Supervisor:
    config = _config(tmp_path)
    sleeper = "import time; time.sleep(60)"
    return Supervisor(
        config,
        [
            _spec(config, "redis", sleeper, "host-1"),
            _spec(config, "kafka", sleeper, None),
            _spec(config, "host-agent", _AGENT, "host-1"),
        ],
    )


def _wait_for_sandbox(sup: Supervisor) -> fleet.HostStatus:
    for _ in range(50):
        host = fleet.cluster_status(sup).host("host-1")
        if host.sandboxes:
            return host
        time.sleep(0.1)
    return fleet.cluster_status(sup).host("host-1")


@pytest.mark.timeout(30)
def test_status_singleHost_groupsServicesAndSandboxesByHost(tmp_path: Path) -> None:
    """One host: its Redis and agent under the host, the agent's descendants as sandboxes by
    app; shared services apart. The JSON has the documented shape."""
    sup = _cluster(tmp_path)
    sup.up()
    try:
        host = _wait_for_sandbox(sup)
        assert (host.id, host.netns, host.ip) == ("host-1", None, "127.0.0.1")
        assert [s.name for s in host.services] == ["redis", "host-agent"]
        [box] = host.sandboxes
        assert box.app == "thumbs" and len(box.pids) == 1
        document = fleet.cluster_status(sup).to_json()
        assert set(document) == {"hosts", "services"}
        assert list(document["services"]) == ["kafka"]
        [entry] = document["hosts"]
        assert entry["services"]["redis"]["alive"] is True
        assert entry["services"]["host-agent"]["healthy"] is True
        assert entry["sandboxes"] == [{"app": "thumbs", "pids": list(box.pids)}]
    finally:
        sup.down()


@pytest.mark.timeout(30)
def test_killHost_killsItsServicesAndSandboxes_notTheSharedOnes(tmp_path: Path) -> None:
    """kill_host SIGKILLs the host's Redis, agent and sandbox processes; Kafka lives on."""
    sup = _cluster(tmp_path)
    sup.up()
    try:
        host = _wait_for_sandbox(sup)
        kafka = sup.pid("kafka")
        killed = fleet.kill_host(sup, "host-1")
        assert sorted(killed) == host.pids and len(killed) == 3
        assert not any(psutil.pid_exists(pid) and _running(pid) for pid in killed)
        assert kafka is not None and _running(kafka)
        assert fleet.cluster_status(sup).host("host-1").pids == []
    finally:
        sup.down()


def test_killHost_unknownHost_namesTheKnownOnes(tmp_path: Path) -> None:
    """An unknown host id is refused, listing the hosts there are."""
    with pytest.raises(KeyError, match=r"no host 'host-9'; hosts are host-1"):
        fleet.kill_host(Supervisor(_config(tmp_path), []), "host-9", signal.SIGKILL)


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
