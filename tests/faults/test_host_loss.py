"""A host that dies loses nothing (issue 10, decision 0011): under a steady load of
asynchronous executions of a three-grain workflow, `kill -9` every process of one host (its
agent, its Redis, its sandboxes) at a random moment; every accepted execution must end with
its correct output. Reports accepted / completed / lost / duplicated grain runs and the time
from the kill to the last result.

Three hosts on this machine, each in its own network namespace (`sand up --hosts 3`), one
Kafka and one Cassandra. ``SAND_FAULT_ROUNDS`` (default 1) repeats each scenario; `make
test-faults` runs them 5 times."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from sand.client import SandClient

from tests.faults.load import Load, await_all
from tests.integration.multihost import MultiHostCluster, multihost_cluster

pytestmark = [pytest.mark.integration, pytest.mark.faults]

RELAY = Path(__file__).parent / "apps" / "relay"
PATH = ["first", "second", "third"]
HOSTS = ["host-1", "host-2", "host-3"]
ROUNDS = int(os.environ.get("SAND_FAULT_ROUNDS", "1"))


def _state_dir() -> Path:
    default = Path(__file__).resolve().parents[2] / "build" / "test-state-faults"
    return Path(os.environ.get("SAND_TEST_STATE_FAULTS", default))


def _runs_app(cluster: MultiHostCluster, host: str, app: str) -> bool:
    try:
        answer = requests.get(f"{cluster.agent_url(host)}/v1/apps/{app}", timeout=5)
    except (requests.RequestException, KeyError):
        return False
    return answer.status_code == 200 and str(answer.json().get("state", "")).startswith("running")


def _await_everywhere(cluster: MultiHostCluster, app: str, timeout_s: float = 120) -> None:
    """Every host runs ``app`` (the agents bring it from the deployment record)."""
    deadline = time.monotonic() + timeout_s
    missing = HOSTS
    while time.monotonic() < deadline:
        missing = [h for h in HOSTS if not _runs_app(cluster, h, app)]
        if not missing:
            return
        time.sleep(1)
    raise AssertionError(f"{app} not running on {missing} after {timeout_s} s")


@pytest.fixture(scope="module")
def cluster() -> Iterator[MultiHostCluster]:
    with multihost_cluster(_state_dir(), hosts=len(HOSTS)) as running:
        client = SandClient(running.gateway_url)
        client.deploy(RELAY, backend="process")
        _await_everywhere(running, "relay")
        yield running


def _round(cluster: MultiHostCluster, tmp_path: Path, name: str, kills: list[float]) -> None:
    """One load of about 8 s with `kill -9` of a whole host at each of ``kills`` (seconds
    after the start, host-2 first, then host-3); then every accepted execution must end."""
    log = tmp_path / f"{name}.runs"
    log.touch()
    log.chmod(0o666)
    load = Load(cluster.gateway_url, "relay", log)
    started = time.monotonic()
    load.start()
    killed_at: list[float] = []
    for victim, at in zip(HOSTS[1:], kills, strict=False):
        time.sleep(max(0.0, at - (time.monotonic() - started)))
        killed_at.append(time.time())
        cluster.kill_host(victim)
    time.sleep(max(0.0, 8 - (time.monotonic() - started)))
    load.stop()
    outcome = await_all(cluster.gateway_url, load, PATH)
    print(outcome.report(name, killed_at[0]))
    assert outcome.accepted > 50, f"too little load: {load.refused[:5]}"
    assert not outcome.lost, f"{len(outcome.lost)} lost, e.g. {outcome.lost[:3]}"
    assert not outcome.wrong, outcome.wrong[:3]
    # bring the killed hosts back for the next round
    cluster.up()
    _await_everywhere(cluster, "relay")


@pytest.mark.timeout(300 * ROUNDS)
def test_hostKilledUnderLoad_everyAcceptedExecutionEnds(
    cluster: MultiHostCluster, tmp_path: Path
) -> None:
    for n in range(ROUNDS):
        _round(cluster, tmp_path, f"host killed (round {n + 1})", [random.uniform(2, 5)])


@pytest.mark.timeout(300 * ROUNDS)
def test_recoveringHostKilledDuringRecovery_everyAcceptedExecutionEnds(
    cluster: MultiHostCluster, tmp_path: Path
) -> None:
    """host-2 dies; about when the survivors take its partitions over (3-4 s later, the
    group's session timeout), host-3 dies too: host-1 ends everything."""
    for n in range(ROUNDS):
        first = random.uniform(2, 3.5)
        _round(
            cluster,
            tmp_path,
            f"recovering host killed (round {n + 1})",
            [first, first + random.uniform(3, 4.5)],
        )
