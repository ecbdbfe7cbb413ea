"""Faults that prove they struck. Each returns a ``Struck`` naming the hosts it took down and
the pids it killed, and asserts, before it returns, that those processes existed and are
gone: a kill that hit nothing fails the test instead of passing it with "0 lost"."""

from __future__ import annotations

import signal
import subprocess
import time

import psutil
from sand.cluster.stores import STORE_KINDS

from tests.faults.load import Struck
from tests.integration.conftest import our_processes
from tests.integration.multihost import MultiHostCluster

_GONE_WITHIN_S = 10.0


def _alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (a zombie has ended: it only waits to be reaped)."""
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def _assert_gone(pids: list[int], what: str) -> None:
    deadline = time.monotonic() + _GONE_WITHIN_S
    while (alive := _alive(pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive, f"{what}: still running after {_GONE_WITHIN_S} s: {alive}"


def kill_host(cluster: MultiHostCluster, host: str) -> Struck:
    """``kill -9`` every process of ``host``: its agent, its Redis, its sandboxes, and on a
    replicated cluster its Kafka broker and Cassandra node."""
    kinds = ("host-agent", "redis", *(STORE_KINDS if cluster.config.replicated else ()))
    own = {kind: cluster.supervisor.pid(f"{host}/{kind}") for kind in kinds}
    assert all(own.values()), f"{host} is not running: {own}"
    pids = cluster.kill_host(host)
    missed = [kind for kind, pid in own.items() if pid not in pids]
    assert not missed, f"killing {host} did not hit its {missed}: {pids}"
    _assert_gone(pids, f"{host} killed")
    return Struck(hosts=(host,), pids=tuple(pids))


def kill_service(cluster: MultiHostCluster, name: str) -> Struck:
    """``kill -9`` the service ``name`` (kafka, cassandra, frontend-1, host-2/kafka, ...)."""
    pid = cluster.supervisor.pid(name)
    assert pid and _alive([pid]), f"{name} is not running (pid {pid})"
    psutil.Process(pid).send_signal(signal.SIGKILL)
    _assert_gone([pid], f"{name} killed")
    return Struck(pids=(pid,))


def stop_cluster(cluster: MultiHostCluster) -> Struck:
    """``sand down`` of the whole cluster: every process of it stopped (every host's work
    with it)."""
    running = [p.pid for p in our_processes(cluster.config)]
    assert running, "the cluster was not running"
    cluster.down()
    _assert_gone(running, "the cluster stopped")
    hosts = tuple(plan.id for plan in cluster.config.host_plans)
    return Struck(hosts=hosts, pids=tuple(running))


def _set_link(veth: str, state: str) -> None:
    subprocess.run(["ip", "link", "set", veth, state], check=True)


def _link_state(veth: str) -> str:
    out = subprocess.run(
        ["ip", "-o", "link", "show", veth], check=True, capture_output=True, text=True
    ).stdout
    return "down" if "state DOWN" in out or "<BROADCAST,MULTICAST>" in out else "up"


def cut_host(cluster: MultiHostCluster, host: str, seconds: float) -> Struck:
    """``host``'s link to the others down for ``seconds``, then up again: nothing is killed
    (its processes live on, its Redis still takes the frontends' calls over its socket), but
    it can reach no broker, node or agent of the others, nor they it. The others take its
    work over; when it comes back it must not lose or wrongly repeat what they recovered."""
    veth = next(p.veth for p in cluster.config.host_plans if p.id == host)
    assert veth is not None, f"{host} has no link of its own"
    _set_link(veth, "down")
    try:
        assert _link_state(veth) == "down", f"{veth} did not go down"
        time.sleep(seconds)
    finally:
        _set_link(veth, "up")
    assert _link_state(veth) == "up", f"{veth} did not come back up"
    return Struck(hosts=(host,))
