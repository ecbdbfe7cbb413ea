"""The replicated global layer under load (issue 26, decision 0042): three hosts, each with a
Kafka broker and a Cassandra node of its own in its namespace (`sand up --hosts 3
--replicated`); topics of 3 replicas, 2 in sync for a write; the keyspace of 3 replicas,
read and written by local quorum. A broker and a node killed alone, a whole host with its
broker and node, and a host cut off the network for 10 s (nothing killed): calls go on being
accepted, and nothing accepted is lost.

The module starts its own cluster (build/test-state-repl, ports + 400), apart from the other
fault tests' unreplicated one."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest

from tests.faults.conftest import (
    FANOUT,
    HOSTS,
    RELAY,
    ROUNDS,
    deploy_fault_apps,
    recovery_after,
    run_with_faults,
    survivors_took_over,
    whole,
)
from tests.faults.kills import cut_host, kill_host, kill_service
from tests.integration.multihost import MultiHostCluster, multihost_cluster

pytestmark = [pytest.mark.integration, pytest.mark.faults]

REPLICAS = 3
MIN_IN_SYNC = 2
# How often a host kill may run one grain of one execution again here: one more than on the
# unreplicated stack (over 10 rounds, a grain ran 5 times once and 4 times in 3 others: the
# killed host's broker may have been the group's coordinator, and the offsets committed to
# it while it died are lost, so the survivors replay from older ones). Successors with ids
# derived from their creator's, delivered once, would bound this at one rerun; not built
# (decision 0012).
# Each grain of the chain sleeps 0.5 s here: at 20 calls/s, ~30 executions are in flight at
# any moment, the load issue 26 measures recovery at; with 0.05 s, ~4 were, and a broker
# killed at a random moment now and then found none.
RELAY_HERE = replace(RELAY, sleep_s=0.5, reruns_per_fault=4)
FANOUT_HERE = replace(FANOUT, reruns_per_fault=4)
# a third of the fault tests' floors of accepted calls: one caller per app, and a call to a
# partition whose leader died waits for the new one, so the count swings (measured 26-113
# for the chain over 5 host kills). What proves the test is nothing lost, work in flight on
# the victim, and calls accepted once the faults were on.
LOAD_FLOOR = 0.3
CUT_S = 10.0


def _state_dir() -> Path:
    default = Path(__file__).resolve().parents[2] / "build" / "test-state-repl"
    return Path(os.environ.get("SAND_TEST_STATE_REPL", default))


@pytest.fixture(scope="module")
def cluster() -> Iterator[MultiHostCluster]:
    """This module's own replicated cluster (named ``cluster``: the directory's fixtures,
    `whole_before` among them, act on it for these tests)."""
    with multihost_cluster(
        _state_dir(), hosts=len(HOSTS), port_offset=400, cluster={"replicated": True}
    ) as running:
        deploy_fault_apps(running)
        yield running


@pytest.mark.timeout(600)  # the first test of the module: its cluster's start counts
def test_everyTopicKeepsThreeReplicas_allInSync(cluster: MultiHostCluster) -> None:
    """SAND's topics (results, every app's) have 3 replicas on 3 different brokers, all in
    sync, and refuse a write that fewer than 2 have."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": cluster.config.kafka_bootstrap})
    topics = admin.list_topics(timeout=30).topics
    ours = sorted(t for t in topics if not t.startswith("__"))
    assert any(t.startswith("sand.") for t in ours), ours
    assert any("relay" in t for t in ours), ours
    for topic in ours:
        for partition in topics[topic].partitions.values():
            assert len(set(partition.replicas)) == REPLICAS, (topic, partition.replicas)
            assert sorted(partition.isrs) == sorted(partition.replicas), (topic, partition.isrs)
    resource = ConfigResource(ConfigResource.Type.TOPIC, ours[0])
    described = admin.describe_configs([resource])[resource].result(timeout=30)
    assert described["min.insync.replicas"].value == str(MIN_IN_SYNC)


@pytest.mark.timeout(300 * ROUNDS)
def test_aBrokerThenANodeKilledUnderLoad_callsGoOn_nothingAcceptedIsLost(
    cluster: MultiHostCluster,
) -> None:
    """One host's broker is killed, a few seconds later another host's Cassandra node (the
    hosts' agents run on): the partitions the broker led move to their in-sync replicas and
    the quorum of the keyspace is still there, so calls go on being accepted throughout,
    and every accepted execution ends with its output (read back by quorum)."""
    for n in range(ROUNDS):
        whole(cluster)  # the round before left its victims down
        broker_host, node_host = random.sample(HOSTS, 2)
        at = random.uniform(2, 3)
        _, (load,), faults = run_with_faults(
            cluster,
            f"{broker_host}'s broker, then {node_host}'s node killed (round {n + 1})",
            [
                (at, partial(kill_service, cluster, f"{broker_host}/kafka")),
                (at + 3, partial(kill_service, cluster, f"{node_host}/cassandra")),
            ],
            duration_s=14,
            settle_s=5,
            min_share=LOAD_FLOOR,
            apps=(RELAY_HERE,),
        )
        after = [a for a in load.accepted if a.at > faults[-1].ended]
        print(
            f"accepted {len(load.accepted)}, of them {len(after)} once both were down; "
            f"refused {len(load.refused)}"
        )
        # replicated: no outage of the layer to wait out (one broker alone refused calls
        # until it was back, decision 0039)
        assert len(after) >= 20, (len(after), load.refused[:5])


@pytest.mark.timeout(300 * ROUNDS)
def test_hostKilledUnderLoad_itsBrokerAndNodeWithIt_nothingAcceptedIsLost(
    cluster: MultiHostCluster,
) -> None:
    """A whole host dies: its agent, Redis and sandboxes, its broker and its node. The
    survivors take its work over from the replicas the others hold."""
    for n in range(ROUNDS):
        whole(cluster)  # the round before left its victims down
        victim = random.choice(HOSTS)
        _, _, faults = run_with_faults(
            cluster,
            f"{victim} killed with its broker and node (round {n + 1})",
            [(random.uniform(2, 5), partial(kill_host, cluster, victim))],
            apps=(RELAY_HERE, FANOUT_HERE),
            # one caller per app, and calls to the partitions the dead broker led wait for
            # their new leader (the broker's session, 4 s): load on past the failover
            duration_s=14,
            settle_s=5,
            min_share=LOAD_FLOOR,
        )
        survivors_took_over(cluster, faults)


@pytest.mark.timeout(300 * ROUNDS)
def test_hostCutOffTheNetwork_thenBack_nothingAcceptedIsLost(cluster: MultiHostCluster) -> None:
    """A host's link is down for 10 s, its processes alive: its broker is fenced and its
    node is down for the others, but its agent goes on with the work on its own bus (its
    Redis still takes the frontends' calls), and backs it up once the link is back. Whether
    the others take its partitions over meanwhile depends on where the group's coordinator
    was (in the first runs they did not: it moved only after the link was back), so that is
    printed, not asserted. Every accepted execution ends once with the right output, and a
    grain that ran on both sides stays within the module's bound on reruns."""
    for n in range(ROUNDS):
        whole(cluster)
        victim = random.choice(HOSTS)
        _, _, faults = run_with_faults(
            cluster,
            f"{victim} cut off the network for {CUT_S:.0f} s (round {n + 1})",
            [(random.uniform(2, 4), partial(cut_host, cluster, victim, CUT_S))],
            apps=(RELAY_HERE, FANOUT_HERE),
            duration_s=14,
            settle_s=5,
            min_share=LOAD_FLOOR,
        )
        print(recovery_after(cluster, faults))
