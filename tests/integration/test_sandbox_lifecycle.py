"""No orphaned sandboxes (decision 0021), against the suite's real stack.

A process sandbox stops by itself when its host agent dies (``kill -9``), within a few
seconds; SIGTERM to a sandbox's main process stops it and every instance within 3 s; an
agent that starts kills what a previous run left in its sandbox cgroups, and removes the
Docker containers of its host, before it serves. The processes of a sandbox are found by
its cgroup (``sand.cluster.leftovers``), which is how ``sand down`` and the suites' final
check find them too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from sand.client import SandApiError, SandClient
from sand.cluster import leftovers
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor
from sand_contracts.constants import LABEL_APP

from tests.integration.tenants import renamed_app

pytestmark = pytest.mark.integration

SPINNER = Path(__file__).resolve().parent / "apps" / "spinner"
STOP_BOUND_S = 3.0  # the bound for SIGTERM
AGENT_DEATH_BOUND_S = 5.0  # "within a few seconds" of the agent's death


@pytest.fixture(scope="module")
def client(cluster: Supervisor, cluster_config: ClusterConfig) -> SandClient:
    return SandClient(cluster_config.gateway_url, token=admin_token(cluster_config), timeout_s=120)


@pytest.fixture
def deployed(client: SandClient, tmp_path: Path) -> Iterator[Callable[[str, str], str]]:
    """Deploys a copy of the spinner app as ``name`` on ``backend``; undeploys at the end."""
    names: list[str] = []

    def deploy(name: str, backend: str) -> str:
        app = client.deploy(renamed_app(SPINNER, name, tmp_path), backend=backend)
        assert app["backend"] == backend
        names.append(name)
        return name

    yield deploy
    for name in names:
        with contextlib.suppress(SandApiError):
            client.undeploy(name)


def sandbox_pids(config: ClusterConfig, app: str) -> set[int]:
    """The live processes of ``app``'s process sandbox(es): its cgroups' members."""
    boxes = [
        box
        for parent in leftovers.sandbox_cgroups([config.state_dir])
        for box in parent.glob(f"proc-{app}-*")
        if box.is_dir()
    ]
    return {pid for pid in leftovers.cgroup_pids(boxes) if _alive(pid)}


def main_process(pids: set[int]) -> int:
    """The sandbox's main process (the supervisor, pid 1 of its namespace): the one member
    whose parent (``unshare``) is outside the cgroup."""
    roots = [pid for pid in pids if psutil.Process(pid).ppid() not in pids]
    assert len(roots) == 1, f"expected one main process among {pids}, got {roots}"
    return roots[0]


def gone_within(pids: set[int], bound_s: float) -> float:
    """Seconds until every one of ``pids`` ended; fails the test beyond ``bound_s``."""
    started = time.monotonic()
    while time.monotonic() - started < bound_s:
        if not any(_alive(pid) for pid in pids):
            return time.monotonic() - started
        time.sleep(0.02)
    left = {pid: _describe(pid) for pid in pids if _alive(pid)}
    raise AssertionError(f"still running {bound_s} s later: {left}")


def answers(client: SandClient, app: str, within_s: float = 120) -> None:
    """``app`` serves a call correctly, retrying while it comes back."""
    give_up = time.monotonic() + within_s
    last: object = None
    while time.monotonic() < give_up:
        try:
            execution = client.invoke(app, {"n": 7})
            if execution.status == "SUCCEEDED" and execution.output == {"pong": 7}:
                return
            last = (execution.status, execution.error, execution.cause)
        except SandApiError as exc:
            last = exc
        time.sleep(1)
    raise AssertionError(f"{app} did not answer within {within_s} s: {last}")


@pytest.mark.timeout(300)
def test_sigterm_stopsTheSandboxAndEveryInstanceWithinThreeSeconds(
    client: SandClient, cluster_config: ClusterConfig, deployed: Callable[[str, str], str]
) -> None:
    """SIGTERM to a process sandbox's main process, while an instance is busy: the main
    process, its worker and every instance are gone within 3 s; the watchdog then starts
    the sandbox again and the app answers."""
    app = deployed("lc-term", "process")
    client.invoke(app, {"sleep_s": 30}, wait=False)
    time.sleep(1.0)  # the instance took the event
    pids = sandbox_pids(cluster_config, app)
    # the main process, the grain worker, the busy instance and the pre-forked ones
    assert len(pids) >= 4, {pid: _describe(pid) for pid in pids}
    supervisor = main_process(pids)

    os.kill(supervisor, signal.SIGTERM)
    took = gone_within(pids, STOP_BOUND_S)

    print(f"SIGTERM: {len(pids)} processes of the sandbox gone in {took * 1000:.0f} ms")
    answers(client, app)


@pytest.mark.timeout(600)
def test_agentKilled_sandboxesStop_nextAgentReclaimsLeftoversBeforeServing(
    cluster: Supervisor,
    client: SandClient,
    cluster_config: ClusterConfig,
    deployed: Callable[[str, str], str],
) -> None:
    """kill -9 of the host agent: its process sandbox and every instance stop within a few
    seconds. The agent started next kills a process a previous run left in a sandbox
    cgroup and removes the previous run's containers before it serves; both apps come
    back from the deployment record and answer."""
    process_app = deployed("lc-proc", "process")
    docker_app = deployed("lc-dock", "docker")
    pids = sandbox_pids(cluster_config, process_app)
    assert len(pids) >= 3, {pid: _describe(pid) for pid in pids}  # main, worker, instances
    old_containers = _containers(cluster_config, docker_app)
    assert old_containers, "the docker app runs a container"
    agent = cluster.pid("host-agent")
    assert agent is not None

    os.kill(agent, signal.SIGKILL)
    took = gone_within(pids, AGENT_DEATH_BOUND_S)
    print(f"agent killed: {len(pids)} processes of its process sandbox gone in {took:.2f} s")

    # what an agent that died without its sandboxes noticing would leave: a process in one
    # of the host's sandbox cgroups
    planted, boxes = _plant_leftover(cluster_config)
    try:
        cluster.up()  # starts the agent again, nothing else
        assert planted.wait(timeout=10) == -signal.SIGKILL
        assert not any(box.exists() for box in boxes)
        assert not set(old_containers) & set(_containers(cluster_config, docker_app))
        answers(client, process_app)
        answers(client, docker_app)
    finally:
        if planted.poll() is None:
            planted.kill()
            planted.wait()


def _plant_leftover(config: ClusterConfig) -> tuple[subprocess.Popen[bytes], list[Path]]:
    parents = leftovers.sandbox_cgroups([config.state_dir])
    assert parents, "the host has sandbox cgroups"
    sleeper = subprocess.Popen(["sleep", "600"])
    boxes = []
    for parent in parents:
        box = parent / "proc-leftover-1"
        box.mkdir()
        (box / "cgroup.procs").write_text(str(sleeper.pid))
        boxes.append(box)
    return sleeper, boxes


def _containers(config: ClusterConfig, app: str) -> list[str]:
    """The ids of every container (running or not) of ``app`` on the stack's engine."""
    listed = subprocess.run(
        [
            "docker",
            "-H",
            config.docker_url,
            "ps",
            "-a",
            "-q",
            "--no-trunc",
            "--filter",
            f"label={LABEL_APP}={app}",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return listed.stdout.split()


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _describe(pid: int) -> str:
    with contextlib.suppress(psutil.Error):
        return " ".join(psutil.Process(pid).cmdline())
    return "(gone)"
