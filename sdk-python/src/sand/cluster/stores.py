"""The processes of the global bus and data layer: one Kafka broker and one Cassandra node, or
one of each per host when the cluster is replicated (decisions 0042 and 0044).

This module says how each broker and node is configured (its rendered ``kafka.properties`` or
``cassandra.yaml``: role, id, quorum, listeners, seed), how a broker's storage is formatted
(once per data dir, with the cluster's one id) and in what order they start (a replicated
cluster's nodes join the ring one at a time). Like ``services``, it only *describes* them
(``specs.ServiceSpec``); ``supervisor`` runs them.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from sand.cluster import probes
from sand.cluster.config import ClusterConfig
from sand.cluster.specs import C1_ONLY, ServiceSpec, in_netns, log_path, render, unverified
from sand.cluster.topology import HostPlan

KAFKA_MAIN = "kafka.Kafka"
KAFKA_STORAGE_TOOL = "kafka.tools.StorageTool"
CASSANDRA_MAIN = "org.apache.cassandra.service.CassandraDaemon"

# what a host of a replicated cluster runs besides its Redis and agent (decision 0042)
STORE_KINDS = ("kafka", "cassandra")


def _lib(config: ClusterConfig, name: str) -> Path:
    return config.home / "deploy" / "lib" / name


def _store_jvm(config: ClusterConfig, heap_mb: int, *options: str) -> tuple[str, ...]:
    """A broker's or a node's JVM: a fixed heap (allocated at start, so its memory is known
    from the first minute), its own ``options``, and, for a short-lived cluster
    (``cluster.quick_jit``), C1 only: measured in a test stack's first minutes, C2's
    compiler threads took about half the CPU of Kafka, Cassandra and the agent (decision
    0037); no bytecode verifier either (``QUICK_START``)."""
    quick = _quick_jvm(config)
    return ("java", f"-Xms{heap_mb}m", f"-Xmx{heap_mb}m", *options, *quick)


def _quick_jvm(config: ClusterConfig) -> tuple[str, ...]:
    return (*C1_ONLY, *unverified(config)) if config.quick_jit else ()


def _kafka_cluster_id(config: ClusterConfig) -> str:
    """The KRaft cluster id every broker's storage is formatted with: made once per state dir
    (22 characters, as Kafka's own tool makes them), so the brokers of a replicated cluster
    agree on it."""
    path = config.conf_dir / "kafka.cluster-id"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(uuid.uuid4().hex[:22])
    return path.read_text().strip()


@dataclass(frozen=True, slots=True)
class _StoreNode:
    """Where one Kafka broker and one Cassandra node run: the cluster's one pair, in the
    root namespace and the state dir's own dirs (``plan`` None), or a replicated cluster's
    host's own (decision 0042)."""

    config: ClusterConfig
    plan: HostPlan | None

    def name(self, kind: str) -> str:
        return kind if self.plan is None else f"{self.plan.id}/{kind}"

    @property
    def ip(self) -> str:
        return self.config.service_ip if self.plan is None else self.plan.ip

    @property
    def conf_dir(self) -> Path:
        return self.config.conf_dir if self.plan is None else self.plan.conf_dir

    @property
    def data_dir(self) -> Path:
        return self.config.data_dir if self.plan is None else self.plan.data_dir

    def log(self, kind: str) -> Path:
        if self.plan is None:
            return log_path(self.config, kind)
        return self.plan.logs_dir / f"{kind}.log"

    def argv(self, argv: tuple[str, ...]) -> tuple[str, ...]:
        return argv if self.plan is None else in_netns(self.plan, argv)

    def ports(self, *ports: int) -> tuple[int, ...]:
        # in a namespace of its own a port is free whatever the root namespace holds
        return ports if self.plan is None else ()

    def needs(self, *needs: str) -> tuple[str, ...]:
        return needs if self.plan is None else (*needs, "nsenter")

    @property
    def host_id(self) -> str | None:
        return None if self.plan is None else self.plan.id

    @property
    def pids_dir(self) -> Path | None:
        return None if self.plan is None else self.plan.pids_dir


def _kafka_settings(node: _StoreNode) -> dict[str, str]:
    """The broker's role, id, quorum and listeners (the template's ``kafka_*`` values)."""
    config, ports = node.config, node.config.ports
    replicas = config.replication_factor
    common = {
        "kafka_ip": node.ip,
        "kafka_dir": str(node.data_dir / "kafka"),
        "replication_factor": str(replicas),
        # a majority of the replicas, so acks=all survives one broker lost of three
        "min_insync": str(replicas // 2 + 1),
    }
    if node.plan is None:
        return {
            **common,
            "broker_session_ms": "9000",
            "broker_heartbeat_ms": "2000",
            "quorum_fetch_ms": "2000",
            "quorum_election_ms": "1000",
            "kafka_roles": "broker,controller",
            "kafka_node_id": "1",
            "kafka_voters": f"1@127.0.0.1:{ports.kafka_controller}",
            "kafka_listeners": (
                f"PLAINTEXT://{node.ip}:{ports.kafka},CONTROLLER://127.0.0.1:{ports.kafka_controller}"
            ),
        }
    controllers = config.host_plans[:replicas]
    controller = node.plan in controllers
    listeners = f"PLAINTEXT://{node.ip}:{ports.kafka}"
    return {
        **common,
        "broker_session_ms": "2000",
        "broker_heartbeat_ms": "500",
        "quorum_fetch_ms": "1000",
        "quorum_election_ms": "500",
        "kafka_roles": "broker,controller" if controller else "broker",
        "kafka_node_id": str(node.plan.index),
        "kafka_voters": ",".join(f"{p.index}@{p.ip}:{ports.kafka_controller}" for p in controllers),
        "kafka_listeners": (
            f"{listeners},CONTROLLER://{node.ip}:{ports.kafka_controller}"
            if controller
            else listeners
        ),
    }


def kafka_spec(config: ClusterConfig, plan: HostPlan | None = None) -> ServiceSpec:
    node = _StoreNode(config, plan)
    lib = _lib(config, "kafka")
    conf = node.conf_dir / "kafka.properties"
    log4j = config.home / "deploy" / "conf" / "log4j2.properties"
    data = node.data_dir / "kafka"
    bootstrap = f"{node.ip}:{config.ports.kafka}"

    def prepare() -> None:
        render(config, "kafka.properties", conf, **_kafka_settings(node))
        if not (data / "meta.properties").exists():
            # KRaft storage is formatted once per data dir, with the cluster's id
            data.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                [
                    "java",
                    *_quick_jvm(config),
                    "-cp",
                    f"{lib}/*",
                    f"-Dlog4j2.configurationFile={log4j}",
                    KAFKA_STORAGE_TOOL,
                    "format",
                    "-t",
                    _kafka_cluster_id(config),
                    "-c",
                    str(conf),
                ],
                check=True,
                capture_output=True,
                timeout=120,
            )

    return ServiceSpec(
        name=node.name("kafka"),
        argv=node.argv(
            (
                *_store_jvm(config, config.kafka_heap_mb, "-XX:+UseG1GC"),
                f"-Dlog4j2.configurationFile={log4j}",
                f"-Dsand.state={config.state_dir}",
                "-cp",
                f"{lib}/*",
                KAFKA_MAIN,
                str(conf),
            )
        ),
        address=bootstrap,
        log=node.log("kafka"),
        health=probes.kafka_metadata(bootstrap),
        ports=node.ports(config.ports.kafka, config.ports.kafka_controller),
        ready_marker="Kafka Server started",
        needs=node.needs("java", str(lib / "kafka_2.13-4.1.0.jar")),
        prepare=prepare,
        host_id=node.host_id,
        pids_dir=node.pids_dir,
    )


# A node that joins a ring gossips with its seed before it takes tokens; Cassandra waits this
# long for the ring's state, and again for its pending ranges to spread (the seed itself, and a
# single node, wait 0: cassandra-jvm17.options). 5 s, not less: the seed's ring delay of 0 makes
# it drop a joiner that has no tokens yet from gossip at once ("FatClient ... removing"), and
# with 2 s a joiner, checking before it had heard the seed again, failed "Unable to contact any
# seeds" in one make test run (decision 0042).
JOIN_RING_DELAY_MS = 5000


def cassandra_spec(config: ClusterConfig, plan: HostPlan | None = None) -> ServiceSpec:
    node = _StoreNode(config, plan)
    lib = _lib(config, "cassandra")
    conf_dir = node.conf_dir / "cassandra"
    data = node.data_dir / "cassandra"
    deploy_conf = config.home / "deploy" / "conf"
    options = [
        line.strip()
        for line in (deploy_conf / "cassandra-jvm17.options").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    seed = config.host_plans[0] if plan is not None else None
    joins = plan is not None and plan != seed
    if joins:
        # the JVM takes the last of a repeated -D
        options.append(f"-Dcassandra.ring_delay_ms={JOIN_RING_DELAY_MS}")
    contact = f"{node.ip}:{config.ports.cassandra_cql}"

    def prepare() -> None:
        data.mkdir(parents=True, exist_ok=True)
        render(
            config,
            "cassandra.yaml",
            conf_dir / "cassandra.yaml",
            cassandra_dir=str(data),
            cassandra_ip=node.ip,
            cassandra_seed=node.ip if seed is None else seed.ip,
            replication_factor=str(config.replication_factor),
        )
        shutil.copy(deploy_conf / "logback.xml", conf_dir / "logback.xml")

    # a replicated cluster's nodes join one at a time, each after the one before it: Cassandra
    # refuses to bootstrap while another node is joining
    previous = config.host_plans[plan.index - 2] if plan is not None and joins else None
    return ServiceSpec(
        name=node.name("cassandra"),
        argv=node.argv(
            (
                *_store_jvm(config, config.cassandra_heap_mb, *options),
                f"-Dcassandra.config=file://{conf_dir / 'cassandra.yaml'}",
                "-Dcassandra-foreground=yes",
                f"-Dcassandra.storagedir={data}",
                f"-Dcassandra.jmx.local.port={config.ports.cassandra_jmx}",
                f"-Dlogback.configurationFile={conf_dir / 'logback.xml'}",
                "-cp",
                f"{conf_dir}:{lib}/*",
                CASSANDRA_MAIN,
            )
        ),
        address=contact,
        log=node.log("cassandra"),
        health=probes.cassandra_query(config.ports.cassandra_cql, node.ip),
        ports=node.ports(
            config.ports.cassandra_cql,
            config.ports.cassandra_storage,
            config.ports.cassandra_jmx,
        ),
        ready_marker="Startup complete",
        needs=node.needs("java", str(lib / "cassandra-all-5.0.5.jar")),
        prepare=prepare,
        after=() if previous is None else (_StoreNode(config, previous).name("cassandra"),),
        host_id=node.host_id,
        pids_dir=node.pids_dir,
    )
