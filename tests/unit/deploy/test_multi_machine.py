"""The example files of deploy/multi-machine/ agree with each other and with the config rules."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from sand.contracts import HOST_ID

EXAMPLES = Path(__file__).resolve().parents[3] / "deploy" / "multi-machine"
MACHINES = sorted(EXAMPLES.glob("cluster.*.json"))
# the sections ClusterConfig.parse requires (config/src/main/java/dev/sand/config/)
REQUIRED = {"state_dir", "host_id", "redis", "kafka", "cassandra", "docker", "frontend"}
REQUIRED |= {"host_agent", "nginx", "sandbox"}


def _load(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def test_three_example_machines_exist() -> None:
    """One example cluster.json per machine of the README's layout."""
    assert [p.name for p in MACHINES] == [f"cluster.sand-{n}.json" for n in (1, 2, 3)]


@pytest.mark.parametrize("path", MACHINES, ids=lambda p: p.name)
def test_example_has_every_section_and_a_valid_host_id(path: Path) -> None:
    """Every section the Java services require is there; the host id follows the name rule."""
    config = _load(path)
    assert config.keys() >= REQUIRED
    assert HOST_ID.fullmatch(config["host_id"])
    assert config["redis"]["socket"].startswith(config["state_dir"] + "/run/redis/")
    assert [h["id"] for h in config["hosts"]] == [config["host_id"]]


def test_machines_share_the_clusters_and_differ_in_host_id() -> None:
    """Host ids are unique; every machine names the same Kafka brokers, datacenter, keyspace."""
    configs = [_load(p) for p in MACHINES]
    assert len({c["host_id"] for c in configs}) == len(configs)
    assert len({c["kafka"]["bootstrap"] for c in configs}) == 1
    assert len(configs[0]["kafka"]["bootstrap"].split(",")) == 3
    assert len({(c["cassandra"]["datacenter"], c["cassandra"]["keyspace"]) for c in configs}) == 1


def test_nginx_upstream_lists_every_frontend_port_with_failover() -> None:
    """The machine's nginx reaches exactly the frontends of cluster.json and fails over."""
    nginx = (EXAMPLES / "nginx.conf").read_text()
    upstream = [int(p) for p in re.findall(r"server 127\.0\.0\.1:(\d+)", nginx)]
    assert upstream == _load(MACHINES[0])["frontend"]["ports"]
    assert "proxy_next_upstream error" in nginx
    assert "proxy_next_upstream error" in (EXAMPLES / "nginx-edge.conf").read_text()


def test_keyspace_uses_network_topology_rf3_in_the_configured_datacenter() -> None:
    """keyspace.cql makes the keyspace the configs name, replicated 3 times in their DC."""
    cql = (EXAMPLES / "keyspace.cql").read_text()
    cassandra = _load(MACHINES[0])["cassandra"]
    assert f"CREATE KEYSPACE IF NOT EXISTS {cassandra['keyspace']}" in cql
    assert f"'class': 'NetworkTopologyStrategy', '{cassandra['datacenter']}': 3" in cql
