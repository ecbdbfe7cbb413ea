"""The grain worker's ExecutionStore on the suite's real Redis (its Lua scripts): ``known``, and
``Engine.replayed`` across two stores standing for two hosts (decision 0015). The two "hosts"
are two app namespaces of one Redis: a group one of them opened is unknown to the other."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import redis
import yaml
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor
from sand_worker.store import RedisExecutionStore
from sand_workflows import load_workflow_text
from sand_workflows.engine import Engine, Finished, TaskCall

pytestmark = pytest.mark.integration

FAN = {
    "StartAt": "Fan",
    "States": {
        "Fan": {
            "Type": "Parallel",
            "Branches": [
                {"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "a", "End": True}}},
                {"StartAt": "B", "States": {"B": {"Type": "Task", "Resource": "b", "End": True}}},
            ],
            "End": True,
        }
    },
}


@pytest.fixture
def stores(cluster: Supervisor, cluster_config: ClusterConfig) -> tuple[Any, Any]:
    client = redis.Redis(
        unix_socket_path=str(cluster_config.redis_socket),
        password=cluster_config.redis_password,
    )
    run = uuid.uuid4().hex[:8]
    return (
        RedisExecutionStore(client, f"store-{run}-lost"),
        RedisExecutionStore(client, f"store-{run}-here"),
    )


def test_known_isTrueForOpenClosedAndCompletedGroups_falseForUnknownOnes(
    stores: tuple[RedisExecutionStore, RedisExecutionStore],
) -> None:
    store, _ = stores
    assert store.known([])
    store.open_group("g-open", 2, "p")
    store.open_group("g-closed", 1, "p")
    assert store.close_group("g-closed") == "p"
    store.open_group("g-done", 1, "p")
    assert store.record_result("g-done", 0, "1").completed
    assert store.known(["g-open", "g-closed", "g-done"])
    assert store.known(["g-open", "g-open"])
    assert not store.known(["g-open", "g-missing"])
    assert not store.is_open(["g-closed"])


def test_replayed_onAnotherHostsStore_rerunsOnce_andTheRerunEnds(
    stores: tuple[RedisExecutionStore, RedisExecutionStore],
) -> None:
    lost_store, here_store = stores
    workflow = load_workflow_text(yaml.safe_dump(FAN), source="fan.yaml")
    lost = Engine(workflow, lost_store)
    a, b = lost.start("exec-1", {"x": 1})
    assert lost.task_succeeded(a.token, "a-out") == []

    here = Engine(workflow, here_store)
    assert lost.replayed(b.token) is None, "the group is known where it was opened"
    rerun = here.replayed(b.token)
    assert rerun is not None and len(rerun) == 2
    # the rerun reopened the group at once (the Parallel is the first state): a later replayed
    # event of the lost run goes on as usual and fills its slot first
    assert here.replayed(a.token) is None
    assert here.task_succeeded(a.token, "a-lost") == []
    ends: list[Any] = []
    for call in rerun:
        assert isinstance(call, TaskCall)
        ends += here.task_succeeded(call.token, f"{call.grain}-out")
    assert ends == [Finished(["a-lost", "b-out"])]
