"""The record of one service of a cluster (``ServiceSpec``) and the helpers that build one.

Both ``services`` (Redis, dockerd, the host agents, frontends and nginx) and ``stores`` (the
global layer's Kafka brokers and Cassandra nodes) describe their processes with these: a
config rendered from ``deploy/conf``, a log in the cluster's logs dir, a command run in its
host's network namespace, the JIT stopped at C1. ``supervisor`` runs what they describe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

from sand.cluster import probes
from sand.cluster.config import ClusterConfig
from sand.cluster.topology import HostPlan

LAYER_STORES = 0  # Redis, dockerd, Kafka, Cassandra: none uses another
LAYER_AGENTS = 1  # the host agents: they use the stores while they stop
LAYER_WAY_IN = 2  # frontends and nginx: they use the agents and the stores


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """How to run one service process and how to tell that it is ready."""

    name: str
    argv: tuple[str, ...]
    address: str
    log: Path
    health: probes.Probe
    ports: tuple[int, ...] = ()
    # A line the service prints once ready; None = ready as soon as `health` passes.
    ready_marker: str | None = None
    # a line of its log that says it gave up waiting for a dependency still starting beside it
    # (the host agent waits 60 s for Cassandra): `sand up` starts it again while its own
    # ready_timeout_s lasts, instead of failing on a machine slow to start the dependency
    retry_marker: str | None = None
    needs: tuple[str, ...] = ()  # names of binaries or files that must exist
    prepare: Callable[[], None] | None = field(default=None, compare=False)
    env: tuple[tuple[str, str], ...] = ()
    host_id: str | None = None  # the host it belongs to; None for a shared service
    pids_dir: Path | None = None  # where its pid file goes; None = the cluster's run/pids
    # What it is built on: LAYER_STORES (used by the others), LAYER_AGENTS, LAYER_WAY_IN.
    # `sand down` stops a layer at a time from the top, the services of a layer at once.
    layer: int = LAYER_STORES
    # services that must be ready before this one starts, when `sand up` starts them too (a
    # replicated cluster's Cassandra nodes join one at a time; its agents wait for every
    # broker and node); one already running is not waited for
    after: tuple[str, ...] = ()


def render(config: ClusterConfig, template: str, path: Path, **extra: str) -> Path:
    """Write ``deploy/conf/<template>`` to ``path`` with the cluster's values and ``extra``."""
    values = {
        "service_ip": config.service_ip,
        "run_dir": str(config.run_dir),
        "logs_dir": str(config.logs_dir),
        "redis_socket": str(config.redis_socket),
        "redis_dir": str(config.data_dir / "redis"),
        "redis_maxmemory_mb": str(config.redis_maxmemory_mb),
        "redis_password": config.redis_password,
        "kafka_port": str(config.ports.kafka),
        "kafka_partitions": str(config.kafka_partitions),
        "cassandra_cql_port": str(config.ports.cassandra_cql),
        "cassandra_storage_port": str(config.ports.cassandra_storage),
        "nginx_dir": str(config.state_dir / "nginx"),
        "nginx_port": str(config.ports.nginx),
        **extra,
    }
    text = Template((config.home / "deploy" / "conf" / template).read_text()).substitute(values)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def log_path(config: ClusterConfig, name: str) -> Path:
    """Where a shared service named ``name`` writes its log."""
    return config.logs_dir / f"{name}.log"


def in_netns(plan: HostPlan, argv: tuple[str, ...]) -> tuple[str, ...]:
    # nsenter enters the host's network namespace only and execs argv in place: the pid we
    # record is the service's own. Not `ip netns exec`: it also gives the process a mount
    # namespace with a /sys of its own, without the machine's cgroup mounts, and the agent
    # needs those for its process sandboxes' CPU and memory limits (decision 0022).
    if plan.netns is None:
        return argv
    return ("nsenter", f"--net=/run/netns/{plan.netns}", "--", *argv)


# stop the JIT at its first, quick compiler (C1)
C1_ONLY = ("-XX:TieredStopAtLevel=1",)
# A short-lived test cluster's JVMs (`cluster.quick_jit`) also skip the bytecode verifier for
# the classes of their classpath: the project's own jars and the pinned Kafka and Cassandra
# releases, never tenant code (grains run in Python sandboxes). Measured on a one-host test
# stack, its JVMs used 7 % less CPU to be ready (medians of 3, 23.0 s -> 21.4 s; decision
# 0037). `make run` and `make bench` verify as usual.
QUICK_START = ("-XX:+UnlockDiagnosticVMOptions", "-XX:-BytecodeVerificationRemote")


def unverified(config: ClusterConfig) -> tuple[str, ...]:
    """``QUICK_START`` for a short-lived cluster's JVMs, nothing for the others."""
    return QUICK_START if config.quick_jit else ()
