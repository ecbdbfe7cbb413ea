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

import pytest

from tests.faults.conftest import (
    BOTH_APPS,
    HOSTS,
    ROUNDS,
    run_with_faults,
    survivors_took_over,
    whole,
)
from tests.faults.kills import kill_host
from tests.faults.load import Struck
from tests.integration.multihost import MultiHostCluster

pytestmark = [pytest.mark.integration, pytest.mark.faults]


def _kill(cluster: MultiHostCluster, host: str) -> Callable[[], Struck]:
    return lambda: kill_host(cluster, host)


@pytest.mark.timeout(300 * ROUNDS)
def test_hostKilledUnderLoad_everyAcceptedExecutionEnds(cluster: MultiHostCluster) -> None:
    for n in range(ROUNDS):
        whole(cluster)  # the round before left its victim down
        victim = random.choice(HOSTS)
        _, _, faults = run_with_faults(
            cluster,
            f"{victim} killed (round {n + 1})",
            [(random.uniform(2, 5), _kill(cluster, victim))],
            apps=BOTH_APPS,
        )
        survivors_took_over(cluster, faults)


@pytest.mark.timeout(300 * ROUNDS)
def test_recoveringHostKilledDuringRecovery_everyAcceptedExecutionEnds(
    cluster: MultiHostCluster,
) -> None:
    """One host dies; about when the survivors have taken its partitions over (2-3 s later:
    the group's session timeout) or a little later, a second one dies too: the last host
    ends everything."""
    for n in range(ROUNDS):
        whole(cluster)
        first, second, _ = random.sample(HOSTS, 3)
        at = random.uniform(2, 3.5)
        _, _, faults = run_with_faults(
            cluster,
            f"{first} killed, then {second} while recovering (round {n + 1})",
            [(at, _kill(cluster, first)), (at + random.uniform(3, 4.5), _kill(cluster, second))],
            apps=BOTH_APPS,
        )
        survivors_took_over(cluster, faults)
