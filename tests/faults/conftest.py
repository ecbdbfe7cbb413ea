"""The fault tests' cluster: three hosts on this machine, each in its own network namespace
(`sand up --hosts 3`), one Kafka and one Cassandra, two frontends behind nginx; the relay
(a chain) and fanout (Parallel and Map) apps deployed (process sandboxes) and running on
every host. Started once for the directory
(build/test-state-faults, ports + 5000 as in ``tests/integration/multihost.py``)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from sand.client import SandClient

from tests.faults.load import Load, Outcome, await_all
from tests.integration.multihost import MultiHostCluster, multihost_cluster

APPS = Path(__file__).parent / "apps"
HOSTS = ["host-1", "host-2", "host-3"]
ROUNDS = int(os.environ.get("SAND_FAULT_ROUNDS", "1"))


@dataclass(frozen=True)
class AppUnderLoad:
    """An app of ``tests/faults/apps`` (process sandboxes), how fast it is invoked, how long
    each grain sleeps, the fields every output must have, and how many calls 8 s of load
    must get accepted."""

    name: str
    rate: float
    sleep_s: float
    expected: dict[str, Any]
    min_accepted: int


# three grains in a chain: 20 calls/s, 60 grain runs/s
RELAY = AppUnderLoad("relay", 20.0, 0.05, {"path": ["first", "second", "third"]}, 50)
# a Task, a Parallel, a Map of four items, a Task: 9 grain runs per call, 45 grain runs/s;
# an execution takes about 2 s (6 grains one after another), most of it inside a group, so
# a host killed at any moment has several executions inside its groups
FANOUT = AppUnderLoad(
    "fanout",
    5.0,
    0.3,
    {
        "path": ["first", "last"],
        "fan": {"left": ["first", "left", "left2"], "right": ["first", "right"]},
        "each": [{"item": i, "path": ["item"]} for i in (1, 2, 3, 4)],
    },
    20,
)

# Both apps under load at once, the chain and the fan-out: one fault (a cluster restart
# takes a minute and more) tests both kinds of work in flight.
BOTH_APPS = (RELAY, FANOUT)


def _state_dir() -> Path:
    default = Path(__file__).resolve().parents[2] / "build" / "test-state-faults"
    return Path(os.environ.get("SAND_TEST_STATE_FAULTS", default))


# The version the session deployed, by app: a host still running the version a previous
# session left on record is about to replace it (the sync), and must not count as ready.
_DEPLOYED: dict[str, int] = {}


def _runs_app(cluster: MultiHostCluster, host: str, app: str) -> bool:
    try:
        answer = requests.get(
            f"{cluster.agent_url(host)}/v1/apps/{app}", headers=cluster.agent_headers, timeout=5
        )
    except (requests.RequestException, KeyError):
        return False
    if answer.status_code != 200:
        return False
    described = answer.json()
    return str(described.get("state", "")).startswith("running") and int(
        described.get("version", 0)
    ) >= _DEPLOYED.get(app, 0)


def await_everywhere(
    cluster: MultiHostCluster,
    apps: tuple[AppUnderLoad, ...] = (RELAY, FANOUT),
    timeout_s: float = 120,
) -> None:
    """Every host runs ``apps`` in the version this session deployed (the agents bring them
    back from the deployment record)."""
    deadline = time.monotonic() + timeout_s
    missing = [(h, a.name) for h in HOSTS for a in apps]
    while time.monotonic() < deadline:
        missing = [(h, a.name) for h in HOSTS for a in apps if not _runs_app(cluster, h, a.name)]
        if not missing:
            return
        time.sleep(1)
    raise AssertionError(f"not running after {timeout_s} s (host, app): {missing}")


@pytest.fixture(scope="session")
def cluster() -> Iterator[MultiHostCluster]:
    with multihost_cluster(_state_dir(), hosts=len(HOSTS)) as running:
        client = SandClient(running.gateway_url, token=running.admin_token)
        for app in (RELAY, FANOUT):
            _DEPLOYED[app.name] = int(client.deploy(APPS / app.name, backend="process")["version"])
        await_everywhere(running)
        # a fresh stack is slow at first (JIT, topic metadata): warm it, so that the first
        # scenario's load is a steady one
        for n in range(40):
            client.invoke("relay", {"n": n, "sleep_s": 0})
        for n in range(10):
            client.invoke("fanout", {"n": n, "sleep_s": 0})
        yield running


def run_with_faults(
    cluster: MultiHostCluster,
    name: str,
    faults: list[tuple[float, Callable[[], None]]],
    duration_s: float = 8,
    min_share: float = 1.0,
    apps: tuple[AppUnderLoad, ...] = (RELAY,),
) -> tuple[list[Outcome], list[Load], list[float]]:
    """About ``duration_s`` of asynchronous load of each of ``apps`` (at once, one caller
    each) through nginx; each fault runs at its time (seconds after the start); then waits
    until every accepted execution ended, prints each app's outcome and checks that nothing
    was lost, every output is right and each app got at least ``min_share`` of its
    ``min_accepted`` calls accepted. Returns the outcomes and loads (in the order of
    ``apps``) and when each fault started (epoch seconds)."""
    loads = [
        Load(
            cluster.gateway_url,
            app.name,
            [
                cluster.config.state_dir / "hosts" / h / "logs" / "apps" / f"{app.name}.log"
                for h in HOSTS
            ],
            rate=app.rate,
            sleep_s=app.sleep_s,
            token=cluster.admin_token,
        )
        for app in apps
    ]
    for load in loads:
        _accepting(load)
    started = time.monotonic()
    for load in loads:
        load.start()
    fault_times: list[float] = []
    for at, fault in faults:
        time.sleep(max(0.0, at - (time.monotonic() - started)))
        fault_times.append(time.time())
        fault()
    time.sleep(max(0.0, duration_s - (time.monotonic() - started)))
    for load in loads:
        load.stop()
    outcomes = [
        await_all(cluster.gateway_url, load, app.expected, fault_times[0])
        for app, load in zip(apps, loads, strict=True)
    ]
    for app, load, outcome in zip(apps, loads, outcomes, strict=True):
        print(
            outcome.report(f"{app.name}: {name}", fault_times[0]),
            f"refused {len(load.refused)}, busy (429, retried later) {load.busy}",
        )
    for app, load, outcome in zip(apps, loads, outcomes, strict=True):
        floor = int(app.min_accepted * min_share)
        assert outcome.accepted >= floor, f"{app.name}: too little load: {load.refused[:5]}"
        assert not outcome.lost, f"{app.name}: {len(outcome.lost)} lost, e.g. {outcome.lost[:3]}"
        assert not outcome.wrong, (app.name, outcome.wrong[:3])
    return outcomes, loads, fault_times


def _accepting(load: Load, in_a_row: int = 4, timeout_s: float = 90) -> None:
    """Wait until ``in_a_row`` async calls in a row are accepted (every frontend nginx sends
    them to knows the app's topics: a cold producer refuses with 503 until its metadata has
    them), so that a fault hits a stack that was taking the load. These calls are not part of
    the load's bookkeeping; their executions simply run."""
    session = load.session()
    deadline = time.monotonic() + timeout_s
    accepted = 0
    last = ""
    while accepted < in_a_row:
        assert time.monotonic() < deadline, f"the app accepts no call: {last}"
        response = session.post(
            f"{load.gateway}/v1/apps/{load.app}/invoke",
            params={"mode": "async"},
            json={"n": -1, "sleep_s": 0},
            timeout=15,
        )
        accepted = accepted + 1 if response.status_code == 202 else 0
        last = f"{response.status_code} {response.text[:200]}"
        if response.status_code != 202:
            time.sleep(0.5)


def deploy_everywhere(cluster: MultiHostCluster, app_dir: Path, timeout_s: float = 120) -> None:
    """Deploys the app in ``app_dir`` (process sandboxes) and waits until every host runs this
    version of it."""
    client = SandClient(cluster.gateway_url, token=cluster.admin_token)
    version = int(client.deploy(app_dir, backend="process")["version"])
    name = app_dir.name  # the apps deployed this way are named after their directory
    _DEPLOYED[name] = version
    await_everywhere(cluster, (AppUnderLoad(name, 0.0, 0.0, {}, 0),), timeout_s)
