"""The cross-host hop on the replicated stack (issue 26): three hosts, each with its own Kafka
broker and Cassandra node in its own network namespace (decision 0042), the hop app's `first`
pinned to host-1 and `second` to host-2, so every hop goes host-1's agent → Kafka (acks=all, 3
replicas) → host-2's agent → host-2's queue.

It starts that stack beside the running one — its own state dir (build/bench-state-repl) and
ports (the defaults + 2000) — measures, and stops it, in one step of `make bench`. C2 as for the
running stack (no ``quick_jit``): the figures sit beside the unreplicated stack's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sand.cluster.bootstrap import admin_token, ensure_admin_token
from sand.cluster.config import load_config
from sand.cluster.supervisor import Supervisor

from bench import sand_series
from bench.stack_cpu import StackCpu

ROOT = Path(__file__).resolve().parents[1]
STATE_DIR = ROOT / "build" / "bench-state-repl"
PORT_SHIFT = 2000
HOSTS = 3
# where each grain of the hop app runs: the hop crosses from host-1 to host-2
PLACEMENT = {"grains": {"first": ["host-1"], "second": ["host-2"]}}


def _ports() -> dict[str, dict[str, Any]]:
    defaults = load_config(env={}).ports
    return {
        "kafka": {
            "port": defaults.kafka + PORT_SHIFT,
            "controller_port": defaults.kafka_controller + PORT_SHIFT,
        },
        "cassandra": {
            "cql_port": defaults.cassandra_cql + PORT_SHIFT,
            "storage_port": defaults.cassandra_storage + PORT_SHIFT,
            "jmx_port": defaults.cassandra_jmx + PORT_SHIFT,
        },
        "frontend": {"ports": [port + PORT_SHIFT for port in defaults.frontends]},
        "host_agent": {"port": defaults.host_agent + PORT_SHIFT},
        "nginx": {"port": defaults.nginx + PORT_SHIFT},
    }


@contextmanager
def replicated_stack(report: Any = print) -> Iterator[sand_series.Cluster]:
    """A running replicated three-host stack (process sandboxes), stopped on exit."""
    overrides: dict[str, dict[str, Any]] = {
        **_ports(),
        "cluster": {"state_dir": str(STATE_DIR), "hosts": HOSTS, "replicated": True},
        "sandbox": {"backend": "process"},
        "docker": {"mode": "off"},
    }
    config = load_config(env={}, overrides=overrides)
    supervisor = Supervisor(config, report=report)
    try:
        supervisor.up()
        ensure_admin_token(config)
        yield sand_series.Cluster(
            config.gateway_url,
            admin_token(config),
            StackCpu(config.state_dir, [host.state_dir for host in config.host_plans]),
        )
    finally:
        supervisor.down()


def cross_host_hops(n: int, gap_s: float, report: Any = print) -> list[float]:
    """``n`` hops from `first` on host-1 to `second` on host-2 on the replicated stack (after 50
    to warm it), one execution at a time; milliseconds."""
    with (
        replicated_stack(report) as cluster,
        cluster.deployed(sand_series.HOP_APP, placement=PLACEMENT) as app,
    ):
        sand_series.warm_up(cluster, app, "main", 50)
        return sand_series.hops(cluster, app, n, gap_s)
