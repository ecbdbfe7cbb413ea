"""The suite's own cluster: real Redis, Kafka, Cassandra, dockerd, nginx, frontends
and host agent, started once per session in a private state dir on private ports
(so a cluster started by `make run` on the default ports is left alone)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from sand.cluster.bootstrap import ensure_admin_token
from sand.cluster.config import ClusterConfig, load_config
from sand.cluster.image import ensure_base_image
from sand.cluster.supervisor import Supervisor

# Private ports: the defaults + 10000, + $SAND_TEST_PORT_OFFSET (say 500) so that a second
# checkout can run the suite at the same time on this machine (with its own SAND_TEST_STATE).
PORT_OFFSET = int(os.environ.get("SAND_TEST_PORT_OFFSET", "0"))
_TEST_PORTS: dict[str, dict[str, Any]] = {
    "kafka": {"port": 29092, "controller_port": 29093},
    "cassandra": {"cql_port": 29042, "storage_port": 27000, "jmx_port": 27199},
    "frontend": {"ports": [28081, 28082]},
    "host_agent": {"port": 28090},
    "nginx": {"port": 28080},
}


def shifted(ports: dict[str, dict[str, Any]], offset: int) -> dict[str, dict[str, Any]]:
    """Every port of ``ports`` plus ``offset``."""
    return {
        section: {
            key: [p + offset for p in value] if isinstance(value, list) else value + offset
            for key, value in values.items()
        }
        for section, values in ports.items()
    }


TEST_PORTS = shifted(_TEST_PORTS, PORT_OFFSET)
# The host agents export the spans of traced executions here; tests/integration/
# test_observability.py listens on it (an OTLP/HTTP receiver of its own) while it runs.
OTLP_PORT = 24318 + PORT_OFFSET
TEST_PORTS["tracing"] = {"otlp_endpoint": f"http://127.0.0.1:{OTLP_PORT}/v1/traces"}


def test_state_dir() -> Path:
    default = Path(__file__).resolve().parents[2] / "build" / "test-state"
    return Path(os.environ.get("SAND_TEST_STATE", default))


def make_config(state_dir: Path, **sections: dict[str, object]) -> ClusterConfig:
    overrides: dict[str, dict[str, object]] = {k: dict(v) for k, v in TEST_PORTS.items()}
    overrides.setdefault("cluster", {})["state_dir"] = str(state_dir)
    for section, values in sections.items():
        overrides.setdefault(section, {}).update(values)
    return load_config(env={}, overrides=overrides)


def our_processes(config: ClusterConfig) -> list[psutil.Process]:
    """Every live process whose command line names the state dir."""
    marker = str(config.state_dir)
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        if process.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if any(marker in part for part in process.info.get("cmdline") or []):
            found.append(process)
    return found


@pytest.fixture(scope="session")
def cluster_config() -> ClusterConfig:
    return make_config(test_state_dir())


@pytest.fixture(scope="session")
def cluster(cluster_config: ClusterConfig) -> Iterator[Supervisor]:
    """A running, all-healthy cluster for the whole session, with its admin token
    (``sand.cluster.bootstrap.admin_token(cluster_config)``); stopped at the end."""
    supervisor = Supervisor(cluster_config, after_ready={"dockerd": lambda: _image(cluster_config)})
    supervisor.up()
    ensure_admin_token(cluster_config)  # as `sand up` does
    yield supervisor
    supervisor.down()


def _image(config: ClusterConfig) -> None:
    ensure_base_image(config)
