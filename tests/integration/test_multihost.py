"""Several SAND hosts on one machine (`sand up --hosts 2`): each host's Redis and agent in
a network namespace of its own; the global data layer across hosts; killing one host; `sand
up` bringing it back; `sand down` leaving nothing behind. Its own state dir and ports (see
``multihost.py``)."""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests
from click.testing import CliRunner
from sand.cli import cli
from sand.client import SandClient

from tests.integration.conftest import our_processes
from tests.integration.multihost import MultiHostCluster, multihost_cluster

pytestmark = pytest.mark.integration

APPS = Path(__file__).parent / "apps"


def _state_dir() -> Path:
    default = Path(__file__).resolve().parents[2] / "build" / "test-state-multi"
    return Path(os.environ.get("SAND_TEST_STATE_MULTI", default))


@pytest.fixture(scope="module")
def cluster() -> Iterator[MultiHostCluster]:
    started = time.monotonic()
    # port_offset: not the ports of fault tests built on the same helper (offset 0)
    with multihost_cluster(_state_dir(), hosts=2, port_offset=100) as running:
        print(f"sand up --hosts 2: all healthy in {time.monotonic() - started:.1f} s")
        yield running


def _sand(cluster: MultiHostCluster, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [*args, "--config", str(cluster.config_file)])
    return result.exit_code, result.output


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.timeout(600)
def test_statusJson_listsBothHosts_eachAgentHealthyInItsNamespace(
    cluster: MultiHostCluster,
) -> None:
    """`sand status --json --hosts`: two hosts, each with its namespace, address, live Redis
    and agent; each agent answers through its own address with its own host id."""
    code, output = _sand(cluster, "status", "--json", "--hosts")
    assert code == 0, output
    document = json.loads(output)
    hosts = document["hosts"]
    assert [h["id"] for h in hosts] == ["host-1", "host-2"]
    assert len({h["netns"] for h in hosts}) == 2 and len({h["ip"] for h in hosts}) == 2
    for host in hosts:
        redis, agent = host["services"]["redis"], host["services"]["host-agent"]
        assert redis["alive"] and _alive(redis["pid"])
        assert agent["alive"] and agent["healthy"] and _alive(agent["pid"])
        health = requests.get(f"http://{host['ip']}:{cluster.config.ports.host_agent}/health")
        assert health.status_code == 200, health.text
        assert health.json()["host_id"] == host["id"]
    assert all(s["healthy"] for s in document["services"].values())
    assert {"kafka", "cassandra", "frontend-1", "frontend-2", "nginx"} <= set(document["services"])
    assert requests.get(f"{cluster.gateway_url}/health", timeout=5).status_code == 200


def _net_namespace(pid: int) -> int | None:
    """The inode of ``pid``'s network namespace; None once it is gone."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except FileNotFoundError:
        return None


@pytest.mark.timeout(600)
def test_processSandbox_runsUnderItsHost_inANetworkNamespaceOfItsOwn(
    cluster: MultiHostCluster,
) -> None:
    """An app deployed to host-2's agent runs its worker under host-2 (status lists its pids
    there), in a network namespace of its own: neither host-2's nor the root's (decision
    0016: a sandbox has no network)."""
    client = SandClient(cluster.agent_url("host-2"), internal_secret=cluster.config.internal_secret)
    client.deploy(APPS / "spy", backend="process")
    deadline = time.monotonic() + 60
    pids: list[int] = []
    namespaces: set[int] = set()
    # until a listed process is still there when its namespace is read: a worker's instances
    # come and go between the status and the stat (failed CI once with every pid gone)
    while time.monotonic() < deadline and not namespaces:
        boxes = cluster.status().host("host-2").sandboxes
        pids = [pid for box in boxes if box.app == "spy" for pid in box.pids]
        namespaces = {ino for pid in pids if (ino := _net_namespace(pid)) is not None}
        time.sleep(0.5)
    assert pids, "no process of app 'spy' on host-2"
    assert namespaces, f"none of the processes of 'spy' on host-2 stayed to be seen: {pids}"
    netns = cluster.config.host_plans[1].netns
    host2 = os.stat(f"/run/netns/{netns}").st_ino
    root = os.stat("/proc/self/ns/net").st_ino  # the test runs in the root namespace
    assert not namespaces & {host2, root}


def _on_host(client: SandClient, host: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Invoke the gdata app until its grain ran on ``host`` and return that output. The
    frontends send invocations to the hosts that run the app in turn, once they know of them
    (a host that just took the app from the deployment record is known a little later)."""
    seen = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        execution = client.invoke("gdata", payload)
        assert execution.status == "SUCCEEDED", execution.cause
        if execution.output["host"] == host:
            return dict(execution.output)
        seen.append(execution.output["host"])
        time.sleep(0.2)
    raise AssertionError(f"no invocation ran on {host} within 60 s; ran on {set(seen)}")


@pytest.mark.timeout(600)
def test_globalData_putOnHost1_readOnHost2(cluster: MultiHostCluster) -> None:
    """The global data layer across hosts: a value a grain puts on host-1 is read by a grain
    running on host-2, and listed among its keys (each host has its own Redis; only
    Cassandra is shared)."""
    key = f"cross/{uuid.uuid4().hex[:8]}"
    client = SandClient(cluster.gateway_url, token=cluster.admin_token, timeout_s=120)
    client.deploy(APPS / "gdata", backend="process")
    # the deployment reaches host-2 through the record (sync every 2 s)
    deadline = time.monotonic() + 120
    while "gdata" not in {box.app for box in cluster.status().host("host-2").sandboxes}:
        assert time.monotonic() < deadline, "gdata never ran on host-2"
        time.sleep(1)
    try:
        wrote = _on_host(client, "host-1", {"ops": [["put", key, {"from": "host-1"}]]})
        assert wrote["results"] == [{"ok": None}]
        read = _on_host(client, "host-2", {"ops": [["get", key], ["keys", "cross/"]]})
        value, keys = (r["ok"] for r in read["results"])
        assert value == {"from": "host-1"}
        assert key in keys
    finally:
        client.undeploy("gdata")


@pytest.mark.timeout(600)
def test_killHost_killsEveryProcessOfThatHostOnly_thenUpBringsItBack(
    cluster: MultiHostCluster,
) -> None:
    """`sand kill-host host-2` kills all of host-2 (Redis, agent, sandboxes) and nothing
    else; `sand up` restarts host-2's Redis and agent and leaves the rest running (same pids)."""
    before = cluster.status()
    victims = before.host("host-2").pids
    # (not host-1's sandboxes: a transient process of its own may end meanwhile)
    survivors = {
        s.name: s.pid for s in (*before.host("host-1").services, *before.services) if s.pid
    }
    assert len(victims) >= 2

    code, output = _sand(cluster, "kill-host", "host-2")
    assert code == 0, output

    assert not any(_alive(pid) for pid in victims)
    after = cluster.status()
    host2 = after.host("host-2")
    assert host2.pids == [] and not any(s.pid for s in host2.services)
    assert {name: pid for name, pid in survivors.items() if not _alive(pid)} == {}
    assert all(s.healthy for s in after.host("host-1").services)

    # `sand up` without a number of hosts anywhere: follows the running cluster's
    no_hosts = cluster.config_file.with_name("no-hosts.toml")
    no_hosts.write_text(
        "".join(
            line
            for line in cluster.config_file.read_text().splitlines(keepends=True)
            if not line.startswith("hosts =")
        )
    )
    result = CliRunner().invoke(cli, ["up", "--config", str(no_hosts)])
    assert result.exit_code == 0, result.output
    assert all(s.already_running for s in cluster.up())  # nothing left to start
    again = cluster.status()
    assert all(s.healthy and s.pid for s in again.host("host-2").services)
    assert {name: pid for name, pid in survivors.items() if not _alive(pid)} == {}


def _history(cluster: MultiHostCluster, execution_id: str) -> list[dict[str, Any]]:
    answer = requests.get(
        f"{cluster.gateway_url}/v1/executions/{execution_id}/history",
        headers={"Authorization": f"Bearer {cluster.admin_token}"},
        params={"limit": 1000},
        timeout=30,
    )
    return list(answer.json().get("events", [])) if answer.status_code == 200 else []


@pytest.mark.timeout(600)
def test_callbackWaits_outliveTheirHost_answersBeforeAndAfterTheReplayLand(
    cluster: MultiHostCluster,
) -> None:
    """Issue 23: waits for task tokens parked on a host that is then killed are taken over by
    the other host (replayed from Kafka, registered again in Cassandra); an answer sent while
    the host is dead, and one sent after the takeover, both end their executions."""
    admin = SandClient(cluster.gateway_url, token=cluster.admin_token, timeout_s=120)
    admin.deploy(APPS / "callbacks", backend="process")
    deadline = time.monotonic() + 60
    # deployed, not only started: a sandbox has its pids before its agent has written the
    # app's metadata, and a frontend places calls only on hosts whose metadata it reads (a
    # fresh clone saw all six calls on host-1, host-2's deploy ending a second after them)
    while not all(
        str((cluster.app_on(h, "callbacks") or {}).get("state", "")).startswith("running")
        for h in ("host-1", "host-2")
    ):
        assert time.monotonic() < deadline, "callbacks is not deployed on both hosts"
        time.sleep(0.5)
    time.sleep(1)  # the frontends' app catalog keeps a read (a miss too) for 0.5 s
    body = {"sleep_s": 0, "timeout_s": 300, "heartbeat_s": 200}
    ids = [admin.invoke("callbacks", body, wait=False).execution_id for _ in range(6)]
    waits: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + 60
    while len(waits) < len(ids):
        assert time.monotonic() < deadline, f"only {len(waits)} of {len(ids)} waits recorded"
        for execution_id in set(ids) - set(waits):
            submitted = [e for e in _history(cluster, execution_id) if e["type"] == "TaskSubmitted"]
            if submitted:
                waits[execution_id] = submitted[0]
        time.sleep(0.5)
    # each frontend places an app's calls in turn over the hosts that run it (its own turn,
    # not one shared with the status polls above): both hosts hold waits
    assert {w["host"] for w in waits.values()} == {"host-1", "host-2"}, waits
    victim, survivor = "host-2", "host-1"
    on_victim = [i for i in ids if waits[i]["host"] == victim]
    # the fault: every process of the victim, its Redis (and the parked timers in it) included
    killed = cluster.kill_host(victim)
    assert killed, "kill-host killed nothing"
    early, late = on_victim[: len(on_victim) // 2 + 1], on_victim[len(on_victim) // 2 + 1 :]
    for execution_id in early:  # answered while its host is dead: no timer to move anywhere
        admin.send_task_success(waits[execution_id]["task_token"], {"sent": "early"})
    time.sleep(10)  # host-1 takes host-2's partitions over and re-registers the waits
    for execution_id in [*late, *(set(ids) - set(on_victim))]:
        admin.send_task_success(waits[execution_id]["task_token"], {"sent": "late"})
    ended: dict[str, Any] = {}
    deadline = time.monotonic() + 90
    while len(ended) < len(ids):
        assert time.monotonic() < deadline, f"not ended: {set(ids) - set(ended)}"
        for execution_id in set(ids) - set(ended):
            doc = admin.execution(execution_id)
            if doc.status != "RUNNING":
                ended[execution_id] = doc
        time.sleep(0.5)
    for execution_id, doc in ended.items():
        sent = "early" if execution_id in early else "late"
        assert doc.status == "SUCCEEDED", doc
        assert doc.output["done"]["answer"] == {"sent": sent}, doc
    assert all(s.healthy for s in cluster.status().host(survivor).services)
    cluster.up()  # the victim back for the tests after this one
    admin.undeploy("callbacks")


@pytest.mark.timeout(600)
def test_schedule_firesOncePerMinute_acrossBothHosts_aHostKilledAndBack(
    cluster: MultiHostCluster, tmp_path: Path
) -> None:
    """Issue 23: both agents run the app and see each firing of its rate(1 minute) schedule;
    each firing starts one execution (one name, one id) while both run, while host-2 is dead,
    and after it came back — consecutive minutes, none missing."""
    from .kafka_topics import app_with_topic, create_topic

    # a fresh name: the suite's Cassandra keeps executions (and firings) between runs
    name_of_app = f"ticks-{os.urandom(3).hex()}"
    app, topic = app_with_topic(APPS / "triggers", name_of_app, tmp_path)
    create_topic(cluster.config, topic)  # for its topic trigger
    admin = SandClient(cluster.gateway_url, token=cluster.admin_token, timeout_s=120)
    admin.deploy(app, backend="process")
    name = re.compile(r"^tick-(\d{8}T\d{6}Z)$")

    def ticks() -> dict[str, str]:
        found: dict[str, str] = {}
        for e in admin.executions(app=name_of_app, limit=200).executions:
            if e.name and name.match(e.name):
                assert e.name not in found, f"two executions for the firing {e.name}"
                found[e.name] = e.execution_id
        return found

    def wait_for(count: int) -> dict[str, str]:
        deadline = time.monotonic() + 100
        while len(found := ticks()) < count:
            assert time.monotonic() < deadline, f"{len(found)} firings of {count}: {found}"
            time.sleep(1)
        return found

    try:
        wait_for(1)
        killed = cluster.kill_host("host-2")
        assert killed, "kill-host killed nothing"
        wait_for(2)  # host-1 alone
        cluster.up()
        fired = wait_for(3)  # both again
        minutes = sorted(
            datetime.strptime(name.match(n)[1], "%Y%m%dT%H%M%SZ")  # type: ignore[index]
            for n in fired
        )
        gaps = {(b - a).total_seconds() for a, b in pairwise(minutes)}
        assert gaps == {60.0}, f"firings not one a minute: {minutes}"
        deadline = time.monotonic() + 60
        for execution_id in fired.values():
            while (doc := admin.execution(execution_id)).status == "RUNNING":
                assert time.monotonic() < deadline, f"{execution_id} still RUNNING"
                time.sleep(0.5)
            assert doc.status == "SUCCEEDED", doc
    finally:
        admin.undeploy(name_of_app)


@pytest.mark.timeout(120)
def test_upWithOtherHostCount_isRefused(cluster: MultiHostCluster) -> None:
    """`sand up --hosts 3` on the running 2-host cluster refuses and says to `sand down`."""
    code, output = _sand(cluster, "up", "--hosts", "3")
    assert code == 1
    message = " ".join(output.split())  # the console wraps long lines
    assert "runs with hosts = 2" in message and "run `sand down` first" in message
    assert len(cluster.status().hosts) == 2


@pytest.mark.timeout(600)
def test_down_leavesNoProcessNoNamespaceNoBridge(cluster: MultiHostCluster) -> None:
    """down (through the CLI, which finds the 2 hosts from the state dir) stops everything
    and removes both namespaces, their veths and the bridge; a second down is a no-op."""
    bridge = cluster.config.bridge
    assert bridge is not None
    code, output = _sand(cluster, "down")
    assert code == 0, output
    assert our_processes(cluster.config) == []
    namespaces = os.listdir("/run/netns") if os.path.isdir("/run/netns") else []
    for plan in cluster.config.host_plans:
        assert plan.netns not in namespaces
        assert not Path("/sys/class/net", str(plan.veth)).exists()
    assert not Path("/sys/class/net", bridge.name).exists()
    code, output = _sand(cluster, "down")
    assert code == 0 and "nothing was running" in output
