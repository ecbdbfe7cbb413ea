"""A replicated cluster (decision 0042): a Kafka broker and a Cassandra node on every host,
in its namespace; their rendered settings, start order and the agents' view of them (no
system change: nothing is started)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from sand.cluster.cluster_json import write_cluster_json
from sand.cluster.config import ClusterConfig, ConfigError, load_config
from sand.cluster.services import build_services
from sand.cluster.specs import ServiceSpec
from sand.cluster.stores import JOIN_RING_DELAY_MS
from sand.cluster.supervisor import recorded_topology, topology_record


def _config(state_dir: Path, hosts: int = 3, replicated: bool = True) -> ClusterConfig:
    return load_config(
        env={},
        overrides={
            "cluster": {"state_dir": str(state_dir), "hosts": hosts, "replicated": replicated}
        },
    )


def _rendered(spec: ServiceSpec, config: ClusterConfig) -> None:
    """Runs ``spec``'s preparation; Kafka's storage counts as formatted (no storage tool)."""
    for plan in config.host_plans:
        (plan.data_dir / "kafka").mkdir(parents=True, exist_ok=True)
        (plan.data_dir / "kafka" / "meta.properties").touch()
    assert spec.prepare is not None
    spec.prepare()


def _properties(path: Path) -> dict[str, str]:
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


@pytest.mark.parametrize("hosts", [1, 2])
def test_replicated_withFewerThanThreeHosts_isRefused_namingBothKeys(hosts: int) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(env={}, overrides={"cluster": {"hosts": hosts, "replicated": True}})
    message = str(caught.value)
    assert "cluster.replicated = true needs cluster.hosts of at least 3" in message
    assert f"got hosts = {hosts}" in message


def test_replicated_offByDefault_oneReplicaOnTheSharedPair(tmp_path: Path) -> None:
    config = _config(tmp_path, hosts=3, replicated=False)
    assert not config.replicated and config.replication_factor == 1
    assert config.kafka_bootstrap == f"{config.service_ip}:{config.ports.kafka}"
    names = {spec.name for spec in build_services(config)}
    assert {"kafka", "cassandra"} <= names
    assert not any(name.endswith(("/kafka", "/cassandra")) for name in names)


def test_replicated_aBrokerAndANodePerHost_inItsNamespace_agentsAfterAllOfThem(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    specs = {spec.name: spec for spec in build_services(config)}
    assert "kafka" not in specs and "cassandra" not in specs
    stores = [f"host-{i}/{kind}" for kind in ("kafka", "cassandra") for i in (1, 2, 3)]
    for plan in config.host_plans:
        for kind in ("kafka", "cassandra"):
            spec = specs[f"{plan.id}/{kind}"]
            assert spec.argv[:2] == ("nsenter", f"--net=/run/netns/{plan.netns}")
            assert spec.host_id == plan.id and spec.pids_dir == plan.pids_dir
            assert spec.log == plan.logs_dir / f"{kind}.log"
            assert spec.ports == ()  # its own namespace: nothing to check in the root one
        assert set(specs[f"{plan.id}/host-agent"].after) == set(stores)
    # the nodes join the ring one at a time, the seed first; brokers start at once
    assert specs["host-1/cassandra"].after == ()
    assert specs["host-2/cassandra"].after == ("host-1/cassandra",)
    assert specs["host-3/cassandra"].after == ("host-2/cassandra",)
    assert all(specs[f"host-{i}/kafka"].after == () for i in (1, 2, 3))
    joiner = f"-Dcassandra.ring_delay_ms={JOIN_RING_DELAY_MS}"
    assert joiner not in specs["host-1/cassandra"].argv
    assert specs["host-2/cassandra"].argv.count(joiner) == 1


def test_replicated_kafka_threeControllers_threeReplicas_aMajorityInSync(tmp_path: Path) -> None:
    config = _config(tmp_path, hosts=4)
    specs = {spec.name: spec for spec in build_services(config)}
    plans = config.host_plans
    cport = config.ports.kafka_controller
    voters = ",".join(f"{p.index}@{p.ip}:{cport}" for p in plans[:3])
    for plan in plans:
        _rendered(specs[f"{plan.id}/kafka"], config)
        props = _properties(plan.conf_dir / "kafka.properties")
        assert props["node.id"] == str(plan.index)
        assert props["controller.quorum.voters"] == voters
        assert props["advertised.listeners"] == f"PLAINTEXT://{plan.ip}:{config.ports.kafka}"
        assert props["log.dirs"] == str(plan.data_dir / "kafka")
        assert props["default.replication.factor"] == "3"
        assert props["min.insync.replicas"] == "2"
        assert props["offsets.topic.replication.factor"] == "3"
        assert props["transaction.state.log.min.isr"] == "2"
        controller = plan.index <= 3
        assert props["process.roles"] == ("broker,controller" if controller else "broker")
        assert ("CONTROLLER://" in props["listeners"]) == controller
    # every broker is listed for the agents and frontends
    assert config.kafka_bootstrap == ",".join(f"{p.ip}:{config.ports.kafka}" for p in plans)


def test_singleBroker_settingsAsBefore(tmp_path: Path) -> None:
    """The default stack keeps one broker, controller on loopback, one replica."""
    config = load_config(env={}, overrides={"cluster": {"state_dir": str(tmp_path)}})
    (config.data_dir / "kafka").mkdir(parents=True)
    (config.data_dir / "kafka" / "meta.properties").touch()
    [kafka] = [spec for spec in build_services(config) if spec.name == "kafka"]
    assert kafka.prepare is not None
    kafka.prepare()
    props = _properties(config.conf_dir / "kafka.properties")
    cport = config.ports.kafka_controller
    assert props["process.roles"] == "broker,controller" and props["node.id"] == "1"
    assert props["controller.quorum.voters"] == f"1@127.0.0.1:{cport}"
    assert props["listeners"] == (
        f"PLAINTEXT://127.0.0.1:{config.ports.kafka},CONTROLLER://127.0.0.1:{cport}"
    )
    assert props["default.replication.factor"] == "1" and props["min.insync.replicas"] == "1"


def test_replicated_cassandra_eachNodeOnItsHost_theFirstHostsTheSeed(tmp_path: Path) -> None:
    config = _config(tmp_path)
    specs = {spec.name: spec for spec in build_services(config)}
    seed = config.host_plans[0].ip
    for plan in config.host_plans:
        _rendered(specs[f"{plan.id}/cassandra"], config)
        yaml = (plan.conf_dir / "cassandra" / "cassandra.yaml").read_text()
        assert f'- seeds: "{seed}:{config.ports.cassandra_storage}"' in yaml
        assert f"listen_address: {plan.ip}\n" in yaml and f"rpc_address: {plan.ip}\n" in yaml
        assert f"data_file_directories: [{plan.data_dir / 'cassandra'}/data]" in yaml
        assert "allocate_tokens_for_local_replication_factor: 3\n" in yaml


def test_replicated_clusterJson_eachAgentStartsFromItsOwnNode_threeReplicas(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    write_cluster_json(config)
    for plan in config.host_plans:
        own = json.loads((plan.conf_dir / "cluster.json").read_text())
        assert own["cassandra"]["contact_point"] == f"{plan.ip}:{config.ports.cassandra_cql}"
        assert own["cassandra"]["replication_factor"] == 3
        assert own["kafka"]["bootstrap"] == config.kafka_bootstrap


def test_topologyRecord_keepsReplicated_soDownAndStatusFollowIt(tmp_path: Path) -> None:
    running = _config(tmp_path)
    running.run_dir.mkdir(parents=True)
    (running.run_dir / "topology.json").write_text(json.dumps(topology_record(running)))
    recorded = recorded_topology(_config(tmp_path, hosts=1, replicated=False))
    assert recorded is not None and recorded.replicated and recorded.host_count == 3


def test_cli_upReplicatedOnTwoHosts_saysWhy_startsNothing(tmp_path: Path) -> None:
    from sand.cli import cli

    env = {**os.environ, "SAND_STATE_DIR": str(tmp_path)}
    result = CliRunner(env=env).invoke(cli, ["up", "--hosts", "2", "--replicated"])
    assert result.exit_code != 0
    assert "cluster.replicated = true needs cluster.hosts of at least 3" in result.output
    assert not (tmp_path / "run").exists()
