"""A cluster of several SAND hosts on this machine, for tests that need more than one host
(host failure, partitions moving, recovery by another host).

    from tests.integration.multihost import multihost_cluster

    with multihost_cluster(tmp_state, hosts=2) as cluster:
        cluster.status().host("host-2").pids      # every pid of host-2
        cluster.kill_host("host-2")               # kill -9 all of them: the host "dies"
        cluster.up()                              # brings host-2 back, nothing else
        requests.get(f"{cluster.gateway_url}/health")

Its own state dir (give each cluster its own) and its own ports: the defaults + 5000
(+ ``port_offset``: give each cluster that may run at the same time its own, like 100;
``test_multihost`` takes 100), so it runs beside the suite's cluster (defaults + 10000,
``conftest.TEST_PORTS``), the port test of ``test_cluster_lifecycle`` (31xxx) and
``make run`` (the defaults); the ports stay below the kernel's ephemeral range (32768+),
which a client's outgoing connection could hold. Sandboxes are processes and Docker is off
unless overridden (``sandbox={"backend": "docker"}, docker={"mode": "managed"}``: tried,
status lists and kill_host kills the containers' processes too).
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests
from sand.cluster.bootstrap import admin_token, ensure_admin_token
from sand.cluster.config import ClusterConfig, load_config
from sand.cluster.fleet import ClusterStatus, cluster_status, kill_host
from sand.cluster.image import ensure_base_image
from sand.cluster.supervisor import Started, Supervisor
from sand.credentials import INTERNAL_HEADER

from tests.integration.conftest import (
    PORT_OFFSET,
    QUICK_JIT,
    READY_TIMEOUT_S,
    USED_STATE_DIRS,
    clear_state,
    one_start_at_a_time,
    shifted,
)

MULTIHOST_PORTS: dict[str, dict[str, Any]] = {
    "kafka": {"port": 24092, "controller_port": 24093},
    "cassandra": {"cql_port": 24042, "storage_port": 22000, "jmx_port": 22199},
    "frontend": {"ports": [23081, 23082]},
    "host_agent": {"port": 23090},
    "nginx": {"port": 23080},
}
FAST = {"sandbox": {"backend": "process"}, "docker": {"mode": "off"}}


def multihost_config(
    state_dir: Path, hosts: int = 2, port_offset: int = 0, **sections: dict[str, Any]
) -> ClusterConfig:
    """The config of a test cluster of ``hosts`` hosts; ``sections`` override any key
    (``kafka={"partitions": 8}``). ``port_offset`` shifts every port, for two such
    clusters at once (for example 100)."""
    overrides: dict[str, dict[str, Any]] = shifted(MULTIHOST_PORTS, port_offset + PORT_OFFSET)
    for section, values in {**FAST, **sections}.items():
        overrides.setdefault(section, {}).update(values)
    overrides.setdefault("cluster", {}).update(state_dir=str(state_dir), hosts=hosts)
    overrides["cluster"].setdefault("ready_timeout_s", READY_TIMEOUT_S)
    overrides["cluster"].setdefault("quick_jit", QUICK_JIT)
    config = load_config(env={}, overrides=overrides)
    USED_STATE_DIRS.add(config.state_dir)
    return config


class MultiHostCluster:
    """Drives one multi-host test cluster; every call blocks until done."""

    def __init__(self, config: ClusterConfig) -> None:
        self.config = config

        def image() -> None:
            ensure_base_image(config)

        hooks = {"dockerd": image}
        self.supervisor = Supervisor(
            config,
            report=lambda line: print(f"[{config.state_dir.name}] {line}"),  # shown on failure
            after_ready=hooks if config.docker_mode == "managed" else {},
        )
        self.config_file = write_config_file(config)

    @property
    def gateway_url(self) -> str:
        return self.config.gateway_url

    @property
    def admin_token(self) -> str:
        """The bearer token of the cluster's admin (written once the cluster was up)."""
        return admin_token(self.config)

    @property
    def agent_headers(self) -> dict[str, str]:
        """What a request straight to a host agent carries: the internal secret (the agent
        then acts as the system, an admin)."""
        return {INTERNAL_HEADER: self.config.internal_secret}

    def agent_url(self, host_id: str) -> str:
        """The agent of ``host_id``, reached from here (the root namespace)."""
        return self.status().host(host_id).to_json()["services"]["host-agent"]["url"]

    def app_on(self, host_id: str, app: str) -> dict[str, Any] | None:
        """``app`` as ``host_id``'s agent describes it (its ``state``, ``version``...); None
        when the agent does not answer or has no such app."""
        try:
            answer = requests.get(
                f"{self.agent_url(host_id)}/v1/apps/{app}", headers=self.agent_headers, timeout=5
            )
        except (requests.RequestException, KeyError):
            return None
        return dict(answer.json()) if answer.status_code == 200 else None

    def up(self) -> list[Started]:
        """Start whatever is not running (all, or a killed host's Redis and agent); one
        cluster of the suite starts at a time."""
        with one_start_at_a_time():
            return self.supervisor.up()

    def down(self) -> list[str]:
        """Stop everything, remove the namespaces and the bridge."""
        return self.supervisor.down()

    def status(self) -> ClusterStatus:
        """Every host (pids, health of its agent, its sandboxes' pids) and shared service."""
        return cluster_status(self.supervisor)

    def kill_host(self, host_id: str, sig: signal.Signals = signal.SIGKILL) -> list[int]:
        """Signal every process of ``host_id`` (SIGKILL: waits until gone); returns the pids."""
        return kill_host(self.supervisor, host_id, sig)


@contextmanager
def multihost_cluster(
    state_dir: Path, hosts: int = 2, port_offset: int = 0, **overrides: dict[str, Any]
) -> Iterator[MultiHostCluster]:
    """A running, all-healthy cluster of ``hosts`` hosts; stopped (network removed) on exit,
    even when the body fails. Arguments as for ``multihost_config``."""
    clear_state(state_dir)
    cluster = MultiHostCluster(multihost_config(state_dir, hosts, port_offset, **overrides))
    try:
        cluster.up()
        ensure_admin_token(cluster.config)  # as `sand up` does
        yield cluster
    finally:
        cluster.down()


def write_config_file(config: ClusterConfig) -> Path:
    """A TOML file beside the state dir with the cluster's state dir, hosts and ports, for
    running the CLI against it: ``sand status --config FILE --json --hosts``."""
    p = config.ports
    sections: dict[str, dict[str, Any]] = {
        "cluster": {
            "state_dir": str(config.state_dir),
            "hosts": config.host_count,
            "replicated": config.replicated,
            "subnet": config.subnet,
            "ready_timeout_s": config.ready_timeout_s,
            "quick_jit": config.quick_jit,
        },
        "sandbox": {"backend": config.sandbox_backend},
        "docker": {"mode": config.docker_mode, "host": config.docker_host},
        "kafka": {"port": p.kafka, "controller_port": p.kafka_controller},
        "cassandra": {
            "cql_port": p.cassandra_cql,
            "storage_port": p.cassandra_storage,
            "jmx_port": p.cassandra_jmx,
        },
        "frontend": {"ports": list(p.frontends)},
        "host_agent": {"port": p.host_agent},
        "nginx": {"port": p.nginx},
    }
    lines = []
    for section, values in sections.items():
        lines.append(f"[{section}]")
        # JSON strings, numbers and lists of numbers are valid TOML
        lines += [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    path = config.state_dir.parent / f"{config.state_dir.name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path
