"""Several hosts on one machine: config, names, addresses, rendered files (no system change)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner
from sand.cluster.cluster_json import write_cluster_json
from sand.cluster.config import ClusterConfig, ConfigError, load_config
from sand.cluster.services import build_services
from sand.cluster.supervisor import StartError, Supervisor, recorded_topology, running_config
from sand.cluster.topology import IFNAME_MAX, LOOPBACK, bridge_for, state_tag


def _config(state_dir: Path, hosts: int = 1, **cluster: object) -> ClusterConfig:
    return load_config(
        env={}, overrides={"cluster": {"state_dir": str(state_dir), "hosts": hosts, **cluster}}
    )


def test_hosts_defaultsToOne_fromEnvironmentToo(tmp_path: Path) -> None:
    """[cluster] hosts is 1 unless SAND_CLUSTER_HOSTS (or a file, or an override) says more."""
    assert load_config(env={}).host_count == 1
    assert load_config(env={"SAND_CLUSTER_HOSTS": "3"}).host_count == 3


@pytest.mark.parametrize("bad", [0, 9, -1, "2", True, 2.5])
def test_hosts_outOfRange_namesKeyAndValue(bad: object) -> None:
    """Only 1..8 hosts are allowed; the message names the key, the range and the value."""
    with pytest.raises(ConfigError, match=r"cluster.hosts must be a whole number from 1 to 8"):
        load_config(env={}, overrides={"cluster": {"hosts": bad}})


@pytest.mark.parametrize("bad", ["10.213.7.0/16", "10.213.7.1/24", "10.213.300.0/24", "x"])
def test_subnet_notA24_isRefused(bad: str) -> None:
    """A subnet must be "A.B.C.0/24" (or "" for a derived one)."""
    with pytest.raises(ConfigError, match=r"cluster.subnet must be a /24"):
        load_config(env={}, overrides={"cluster": {"subnet": bad}})


def test_singleHost_hasNoNamespace_andTheStateDirsOwnPaths(tmp_path: Path) -> None:
    """One host: no bridge, no namespace, loopback, today's paths and host id."""
    config = _config(tmp_path, host_id="edge-7")
    [plan] = config.host_plans
    assert config.bridge is None
    assert (plan.id, plan.netns, plan.ip, plan.state_dir) == ("edge-7", None, LOOPBACK, tmp_path)
    assert plan.redis_socket == tmp_path / "run" / "redis" / "redis.sock" == config.redis_socket
    assert config.kafka_bootstrap == f"127.0.0.1:{config.ports.kafka}"
    assert config.cassandra_contact_point == f"127.0.0.1:{config.ports.cassandra_cql}"


def test_severalHosts_namesAndAddressesDerivedFromStateDir(tmp_path: Path) -> None:
    """host-1..N, each with a namespace, veth pair, address .11.., and a directory of its own."""
    config = _config(tmp_path, hosts=3)
    bridge = config.bridge
    assert bridge is not None
    tag = state_tag(tmp_path)
    assert re.fullmatch(r"[0-9a-f]{6}", tag)
    assert bridge.name == f"sandbr-{tag}" and len(bridge.name) <= IFNAME_MAX
    assert re.fullmatch(r"10\.213\.\d{1,3}\.1", bridge.ip)
    assert config.kafka_bootstrap == f"{bridge.ip}:{config.ports.kafka}"
    assert config.cassandra_contact_point == f"{bridge.ip}:{config.ports.cassandra_cql}"
    plans = config.host_plans
    assert [p.id for p in plans] == ["host-1", "host-2", "host-3"]
    for index, plan in enumerate(plans, start=1):
        assert plan.ip == f"{bridge.prefix}.{10 + index}"
        assert plan.state_dir == tmp_path / "hosts" / plan.id
        assert plan.netns == f"sand-{tag}-{plan.id}"
        assert plan.veth and plan.peer and len(plan.veth) <= IFNAME_MAX >= len(plan.peer)
        assert plan.redis_socket == plan.state_dir / "run" / "redis" / "redis.sock"
    assert len({p.netns for p in plans} | {p.veth for p in plans} | {p.peer for p in plans}) == 9


def test_twoStateDirs_doNotClash(tmp_path: Path) -> None:
    """Different state dirs give different bridges and namespaces (the subnet may be set)."""
    one, two = _config(tmp_path / "a", hosts=2), _config(tmp_path / "b", hosts=2)
    assert one.bridge and two.bridge and one.bridge.name != two.bridge.name
    assert {p.netns for p in one.host_plans}.isdisjoint(p.netns for p in two.host_plans)
    fixed = bridge_for(tmp_path / "a", "10.99.5.0/24")
    assert (fixed.ip, fixed.subnet) == ("10.99.5.1", "10.99.5.0/24")


def test_singleHost_servicesAsBefore(tmp_path: Path) -> None:
    """One host: the same service names, in the same order, in the root namespace."""
    names = [s.name for s in build_services(_config(tmp_path))]
    assert names == [
        "redis",
        "dockerd",
        "kafka",
        "cassandra",
        "host-agent",
        "frontend-1",
        "frontend-2",
        "nginx",
    ]
    assert all(s.argv[0] != "ip" for s in build_services(_config(tmp_path)))


def test_severalHosts_redisAndAgentPerHost_inTheirNamespace(tmp_path: Path) -> None:
    """Each host's Redis and agent run under `nsenter --net`, with pid files in its own dir;
    the agent is probed through its namespace address."""
    config = _config(tmp_path, hosts=2)
    specs = {s.name: s for s in build_services(config)}
    assert "redis" not in specs and "host-agent" not in specs
    for plan in config.host_plans:
        for kind in ("redis", "host-agent"):
            spec = specs[f"{plan.id}/{kind}"]
            assert spec.argv[:3] == ("nsenter", f"--net=/run/netns/{plan.netns}", "--")
            assert spec.host_id == plan.id and spec.pids_dir == plan.pids_dir
            assert spec.log == plan.logs_dir / f"{kind}.log"
        agent = specs[f"{plan.id}/host-agent"]
        assert agent.address == f"http://{plan.ip}:{config.ports.host_agent}"
        assert agent.argv[-1] == str(plan.conf_dir / "cluster.json")
    assert specs["kafka"].address == config.kafka_bootstrap


def test_clusterJson_singleHost_listsItself(tmp_path: Path) -> None:
    """One host: cluster.json as before, plus host_agent.bind and .secret and a one-entry
    host list."""
    config = _config(tmp_path)
    document = json.loads(write_cluster_json(config).read_text())
    assert document["host_id"] == "host-1"
    assert document["redis"]["socket"] == str(tmp_path / "run" / "redis" / "redis.sock")
    assert document["host_agent"] == {
        "port": config.ports.host_agent,
        "bind": "127.0.0.1",
        "secret": config.internal_secret,
    }
    assert document["hosts"] == [
        {
            "id": "host-1",
            "redis_socket": str(tmp_path / "run" / "redis" / "redis.sock"),
            "agent_url": f"http://127.0.0.1:{config.ports.host_agent}",
        }
    ]
    assert not (tmp_path / "hosts").exists()


def test_clusterJson_severalHosts_sharedAndOnePerHost(tmp_path: Path) -> None:
    """The shared file describes host-1 and lists all; each host's file describes itself."""
    config = _config(tmp_path, hosts=2)
    bridge = config.bridge
    assert bridge is not None
    shared = json.loads(write_cluster_json(config).read_text())
    port = config.ports.host_agent
    assert [h["agent_url"] for h in shared["hosts"]] == [
        f"http://{bridge.prefix}.11:{port}",
        f"http://{bridge.prefix}.12:{port}",
    ]
    assert shared["kafka"]["bootstrap"] == f"{bridge.ip}:{config.ports.kafka}"
    assert shared["cassandra"]["contact_point"] == f"{bridge.ip}:{config.ports.cassandra_cql}"
    for plan in config.host_plans:
        own = json.loads((plan.conf_dir / "cluster.json").read_text())
        assert own["host_id"] == plan.id
        assert own["state_dir"] == str(plan.state_dir)
        assert own["redis"]["socket"] == str(plan.redis_socket)
        assert own["redis"]["password"] == config.redis_password  # one secret for all
        # one internal secret for every agent and frontend
        assert own["host_agent"] == {
            "port": port,
            "bind": plan.ip,
            "secret": config.internal_secret,
        }
        assert own["hosts"] == shared["hosts"]
    assert shared["host_id"] == "host-1" and shared["host_agent"]["bind"] == f"{bridge.prefix}.11"


def test_kafkaAndCassandra_listenOnTheBridge_withFastGroups(tmp_path: Path) -> None:
    """Several hosts: Kafka and Cassandra listen and advertise on the bridge address; Kafka
    allows ~3 s consumer sessions and starts groups at once (also on one host)."""
    for hosts in (1, 2):
        config = _config(tmp_path / str(hosts), hosts=hosts)
        # formatted already: rendering only, no Kafka storage tool
        (config.data_dir / "kafka").mkdir(parents=True)
        (config.data_dir / "kafka" / "meta.properties").touch()
        specs = {s.name: s for s in build_services(config)}
        for name in ("kafka", "cassandra"):
            prepare = specs[name].prepare
            assert prepare is not None
            prepare()
        kafka = (config.conf_dir / "kafka.properties").read_text()
        cassandra = (config.conf_dir / "cassandra" / "cassandra.yaml").read_text()
        ip = config.service_ip
        assert f"listeners=PLAINTEXT://{ip}:{config.ports.kafka}," in kafka
        assert f"advertised.listeners=PLAINTEXT://{ip}:{config.ports.kafka}\n" in kafka
        assert "group.min.session.timeout.ms=1000\n" in kafka
        assert "group.initial.rebalance.delay.ms=0\n" in kafka
        assert f"listen_address: {ip}\n" in cassandra and f"rpc_address: {ip}\n" in cassandra


def test_up_otherHostCountWhileRunning_isRefused(tmp_path: Path) -> None:
    """Changing the number of hosts of a running cluster is refused, telling to `sand down`."""
    running = _config(tmp_path, hosts=2)
    bridge = running.bridge
    assert bridge is not None
    running.run_dir.mkdir(parents=True)
    record = {"hosts": 2, "subnet": bridge.subnet}
    (running.run_dir / "topology.json").write_text(json.dumps(record))
    recorded = recorded_topology(_config(tmp_path))
    assert recorded is not None and recorded.host_plans == running.host_plans
    assert running_config(_config(tmp_path)).host_count == 2  # down and status follow it
    # pretend Kafka runs: its pid file names this very process
    me = psutil.Process()
    pids = running.run_dir / "pids"
    pids.mkdir()
    (pids / "kafka.json").write_text(json.dumps({"pid": me.pid, "create_time": me.create_time()}))
    with pytest.raises(StartError, match=r"runs with hosts = 2 .* run `sand down` first"):
        Supervisor(_config(tmp_path, hosts=3)).up()
    assert (pids / "kafka.json").exists()


def test_cli_upHostsOutOfRange_saysWhy(tmp_path: Path) -> None:
    """`sand up --hosts 9` fails before starting anything, naming the range."""
    from sand.cli import cli

    env = {**os.environ, "SAND_STATE_DIR": str(tmp_path)}
    result = CliRunner(env=env).invoke(cli, ["up", "--hosts", "9"])
    assert result.exit_code != 0
    assert "cluster.hosts must be a whole number from 1 to 8, got 9" in result.output
    assert not (tmp_path / "run").exists()
