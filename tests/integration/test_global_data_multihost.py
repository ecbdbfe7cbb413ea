"""The global data layer across hosts: a value a grain puts on host-1 is read by a grain
running on host-2 (each host has its own Redis; only Cassandra is shared). Its own cluster
of two hosts (state dir build/test-state-gdata, ports + 300)."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from sand.client import SandClient

from tests.integration.multihost import multihost_cluster

pytestmark = pytest.mark.integration

APP_DIR = Path(__file__).resolve().parent / "apps" / "gdata"


def _state_dir() -> Path:
    default = Path(__file__).resolve().parents[2] / "build" / "test-state-gdata"
    return Path(os.environ.get("SAND_GDATA_STATE", default))


def on_host(client: SandClient, host: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Invoke until the grain ran on ``host`` (frontends send invocations to the hosts in
    turn) and return that output."""
    seen = []
    for _ in range(20):
        execution = client.invoke("gdata", payload)
        assert execution.status == "SUCCEEDED", execution.cause
        if execution.output["host"] == host:
            return dict(execution.output)
        seen.append(execution.output["host"])
    raise AssertionError(f"no invocation ran on {host}; ran on {seen}")


@pytest.mark.timeout(600)
def test_globalData_putOnHost1_readOnHost2() -> None:
    """A grain on host-1 puts a value; a grain on host-2 reads it, and its keys."""
    key = f"cross/{uuid.uuid4().hex[:8]}"
    with multihost_cluster(_state_dir(), hosts=2, port_offset=300) as cluster:
        client = SandClient(cluster.gateway_url, token=cluster.admin_token, timeout_s=120)
        client.deploy(APP_DIR, backend="process")
        # the deployment reaches host-2 through the record (sync every 2 s)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            hosts = {box.app for box in cluster.status().host("host-2").sandboxes}
            if "gdata" in hosts:
                break
            time.sleep(1)
        wrote = on_host(client, "host-1", {"ops": [["put", key, {"from": "host-1"}]]})
        assert wrote["results"] == [{"ok": None}]
        read = on_host(client, "host-2", {"ops": [["get", key], ["keys", "cross/"]]})
        value, keys = (r["ok"] for r in read["results"])
        assert value == {"from": "host-1"}
        assert key in keys
