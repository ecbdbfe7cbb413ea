"""Per-application placement on a 3-host cluster (decision 0013): an app placed on host-1 and
host-2 with its middle grain pinned to host-2. A hop to the middle grain from host-1 crosses
hosts through its Kafka topic; every other hop stays on the local bus of the host it starts
on; host-3 runs nothing of the app; invalid placements are refused at deploy. Its own state
dir and ports (``port_offset=200``), the process sandbox backend."""

from __future__ import annotations

import os
import shutil
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner
from sand.cli import cli
from sand.client import SandApiError, SandClient

from tests.integration.multihost import MultiHostCluster, multihost_cluster

pytestmark = pytest.mark.integration

APP_DIR = Path(__file__).parent / "apps" / "placed"
HOSTS = ("host-1", "host-2", "host-3")
CALLS = 30


def _state_dir() -> Path:
    default = Path(__file__).resolve().parents[2] / "build" / "test-state-place"
    return Path(os.environ.get("SAND_TEST_STATE_PLACE", default))


@pytest.fixture(scope="module")
def cluster() -> Iterator[MultiHostCluster]:
    with multihost_cluster(_state_dir(), hosts=3, port_offset=200) as running:
        yield running


def _agent_app(cluster: MultiHostCluster, host: str, app: str) -> dict[str, Any] | None:
    response = requests.get(
        f"{cluster.agent_url(host)}/v1/apps/{app}", headers=cluster.agent_headers, timeout=5
    )
    return response.json() if response.status_code == 200 else None


def _await_placed(cluster: MultiHostCluster, app: str, version: int) -> dict[str, dict[str, Any]]:
    """Every host's view of ``app`` once each has taken ``version`` (the others sync from
    the deployment record every 2 s)."""
    deadline = time.monotonic() + 90
    views: dict[str, dict[str, Any] | None] = {}
    while time.monotonic() < deadline:
        views = {host: _agent_app(cluster, host, app) for host in HOSTS}
        if all(v is not None and v.get("version") == version for v in views.values()) and all(
            str(v["state"]).startswith("running")
            for v in views.values()
            if v is not None and v["local_grains"]
        ):
            return {h: v for h, v in views.items() if v is not None}
        time.sleep(0.5)
    raise AssertionError(f"app {app!r} v{version} not placed within 90 s: {views}")


@pytest.fixture(scope="module")
def placed(cluster: MultiHostCluster) -> dict[str, dict[str, Any]]:
    """The app deployed through the gateway, as each host's agent describes it."""
    app = SandClient(cluster.gateway_url, token=cluster.admin_token).deploy(
        APP_DIR, backend="process"
    )
    return _await_placed(cluster, "placed", app["version"])


@pytest.mark.timeout(600)
def test_agents_runOnlyTheGrainsPlacedOnThem(
    cluster: MultiHostCluster, placed: dict[str, dict[str, Any]]
) -> None:
    """host-1 runs first and last, host-2 all three, host-3 nothing (no sandbox at all);
    every agent and `sand status` show the placement."""
    assert placed["host-1"]["local_grains"] == ["first", "last"]
    assert placed["host-2"]["local_grains"] == ["first", "middle", "last"]
    assert placed["host-3"]["local_grains"] == []
    assert placed["host-3"]["state"] == "not placed on this host"
    expected = {
        "hosts": ["host-1", "host-2"],
        "grains": {
            "first": ["host-1", "host-2"],
            "middle": ["host-2"],
            "last": ["host-1", "host-2"],
        },
    }
    assert all(view["placement"] == expected for view in placed.values())

    status = cluster.status()
    assert not [b for b in status.host("host-3").sandboxes if b.app == "placed"]
    assert [b for b in status.host("host-1").sandboxes if b.app == "placed" and b.pids]
    by_host = {h.id: {a.name: a for a in h.apps or ()} for h in status.hosts}
    assert by_host["host-1"]["placed"].grains == ("first", "last")
    assert by_host["host-3"]["placed"].state == "not placed on this host"
    # the same through the command line
    result = CliRunner().invoke(
        cli, ["status", "--json", "--hosts", "--config", str(cluster.config_file)]
    )
    assert '"grains": [\n' in result.output or '"grains": [' in result.output
    assert "not placed on this host" in result.output


@pytest.mark.timeout(600)
def test_invocations_middleGrainOnHost2_othersOnTheHostThatTookIt(
    cluster: MultiHostCluster, placed: dict[str, dict[str, Any]]
) -> None:
    """Many calls through the gateway: every result is right; the first grain ran on the host
    that took the call (one that runs the entry grain: never host-3), the middle grain on
    host-2 only, and the last grain where the middle one ran (host-2 runs it too, so that
    hop stays on host-2's local bus)."""
    client = SandClient(cluster.gateway_url, token=cluster.admin_token, timeout_s=60)
    took: Counter[str] = Counter()
    call_ms: dict[str, list[float]] = {"host-1": [], "host-2": []}
    for n in range(CALLS):
        started = time.monotonic()
        execution = client.invoke("placed", {"n": n})
        elapsed_ms = 1000 * (time.monotonic() - started)
        assert execution.status == "SUCCEEDED", execution
        assert execution.output["n"] == n + 3
        (first, h1), (middle, h2), (last, h3) = execution.output["ran"]
        assert (first, middle, last) == ("first", "middle", "last")
        assert h1 in ("host-1", "host-2"), execution.output
        assert h2 == "host-2" and h3 == "host-2", execution.output
        took[h1] += 1
        call_ms[h1].append(elapsed_ms)
    # a call taken by host-1 crosses to host-2 once (through the middle grain's topic);
    # one taken by host-2 never leaves it: the difference is the cost of a cross-host hop
    for host, times in call_ms.items():
        if times:
            print(f"taken by {host}: {len(times)} calls, p50 {statistics.median(times):.0f} ms")
    # the frontends spread the invocations over both hosts that run the entry grain
    assert set(took) == {"host-1", "host-2"}, took


@pytest.mark.timeout(600)
def test_unknownHostInDeployParameter_isRefused_namingFieldAndValue(
    cluster: MultiHostCluster, placed: dict[str, dict[str, Any]]
) -> None:
    """A placement naming a host the cluster lacks is refused (400), nothing changes."""
    client = SandClient(cluster.gateway_url, token=cluster.admin_token)
    with pytest.raises(SandApiError) as info:
        client.deploy(APP_DIR, backend="process", placement={"hosts": ["host-1", "host-9"]})
    assert info.value.status == 400
    assert (
        "deploy request: placement.hosts: unknown host 'host-9' "
        "(the cluster's hosts: host-1, host-2, host-3)"
    ) in str(info.value)
    assert _agent_app(cluster, "host-1", "placed")["version"] == placed["host-1"]["version"]  # type: ignore[index]


@pytest.mark.timeout(600)
def test_unknownGrainInManifest_isRefused_namingFileFieldAndValue(
    cluster: MultiHostCluster, tmp_path: Path
) -> None:
    """A manifest that pins a grain the app lacks is refused, naming app.yaml and the field."""
    broken = tmp_path / "placed"
    shutil.copytree(APP_DIR, broken)
    manifest = broken / "app.yaml"
    text = manifest.read_text()
    manifest.write_text(text.replace("    middle: [host-2]", "    resize: [host-2]"))
    with pytest.raises(SandApiError) as info:
        SandClient(cluster.gateway_url, token=cluster.admin_token).deploy(broken, backend="process")
    assert info.value.status == 400
    assert (
        "app.yaml: placement.grains.resize: 'resize' is not a grain of the app "
        "(grains: first, middle, last)"
    ) in str(info.value)
