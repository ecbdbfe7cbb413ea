"""A host that dies loses nothing (issue 10, decisions 0011 and 0015): under a steady load of
asynchronous executions of a three-grain chain and of a workflow with a Parallel and a Map,
`kill -9` every process of one host (its agent, its Redis, its sandboxes) at a random moment;
every accepted execution must end with its correct output. Reports accepted / completed /
lost / duplicated grain runs and the time from the kill to the last result of an execution
accepted before it.

``SAND_FAULT_ROUNDS`` (default 1) repeats each scenario; `make test-faults` runs 5."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.faults.conftest import (
    BOTH_APPS,
    HOSTS,
    ROUNDS,
    await_everywhere,
    run_with_faults,
)
from tests.faults.kills import kill_host
from tests.faults.load import Fault, Struck, recovery
from tests.integration.multihost import MultiHostCluster

pytestmark = [pytest.mark.integration, pytest.mark.faults]


def _agent_logs(cluster: MultiHostCluster) -> dict[str, Path]:
    return {h: cluster.config.state_dir / "hosts" / h / "logs" / "host-agent.log" for h in HOSTS}


def _kill(cluster: MultiHostCluster, host: str) -> Callable[[], Struck]:
    return lambda: kill_host(cluster, host)


def _survivors_took_over(cluster: MultiHostCluster, faults: list[Fault]) -> None:
    """Prints where the recovery time went and asserts that the hosts left alive took the
    dead ones' work over (replayed what they had taken, delivered what they had not)."""
    report = recovery(_agent_logs(cluster), faults[0].began)
    print(report)
    dead = {host for fault in faults for host in fault.struck.hosts}
    by_survivors = sum(n for host, n in report.taken_over.items() if host not in dead)
    assert by_survivors >= 1, f"no survivor took over any event of {sorted(dead)}: {report}"


@pytest.mark.timeout(300 * ROUNDS)
def test_hostKilledUnderLoad_everyAcceptedExecutionEnds(cluster: MultiHostCluster) -> None:
    for n in range(ROUNDS):
        victim = random.choice(HOSTS)
        _, _, faults = run_with_faults(
            cluster,
            f"{victim} killed (round {n + 1})",
            [(random.uniform(2, 5), _kill(cluster, victim))],
            apps=BOTH_APPS,
        )
        _survivors_took_over(cluster, faults)
        cluster.up()
        await_everywhere(cluster)


@pytest.mark.timeout(300 * ROUNDS)
def test_recoveringHostKilledDuringRecovery_everyAcceptedExecutionEnds(
    cluster: MultiHostCluster,
) -> None:
    """One host dies; about when the survivors have taken its partitions over (2-3 s later:
    the group's session timeout) or a little later, a second one dies too: the last host
    ends everything."""
    for n in range(ROUNDS):
        first, second, _ = random.sample(HOSTS, 3)
        at = random.uniform(2, 3.5)
        _, _, faults = run_with_faults(
            cluster,
            f"{first} killed, then {second} while recovering (round {n + 1})",
            [(at, _kill(cluster, first)), (at + random.uniform(3, 4.5), _kill(cluster, second))],
            apps=BOTH_APPS,
        )
        _survivors_took_over(cluster, faults)
        cluster.up()
        await_everywhere(cluster)
