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
from sand.client import SandClient

from tests.faults.load import Fault, Load, Outcome, Recovery, Struck, await_all, recovery
from tests.integration.multihost import MultiHostCluster, multihost_cluster

APPS = Path(__file__).parent / "apps"
HOSTS = ["host-1", "host-2", "host-3"]
ROUNDS = int(os.environ.get("SAND_FAULT_ROUNDS", "1"))


@dataclass(frozen=True)
class AppUnderLoad:
    """An app of ``tests/faults/apps`` (process sandboxes), how fast it is invoked, how long
    each grain sleeps, the fields every output must have, how many calls 8 s of load must
    get accepted, and how many more times a fault may run one grain of one execution."""

    name: str
    rate: float
    sleep_s: float
    expected: dict[str, Any]
    min_accepted: int
    # How often a fault may run one grain of one execution again (measured: 2, in both apps).
    # In a chain, each event the dead host had not finished is replayed, its own FINISHED
    # flag included when it waited for its products' acks (decision 0014): a replayed
    # predecessor emits its successor again, beside the successor's own replay, so the k-th
    # grain may run k more times. Inside a Parallel or Map (decision 0015) the execution
    # runs again from its input and the lost run's replayed events mix in. Successors with
    # ids derived from their creator's, delivered once, would bound this at one rerun; not
    # built (decision 0012).
    reruns_per_fault: int = 3


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
    described = cluster.app_on(host, app)
    return (
        described is not None
        and str(described.get("state", "")).startswith("running")
        and int(described.get("version", 0)) >= _DEPLOYED.get(app, 0)
    )


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


@pytest.fixture(autouse=True)
def whole_before(request: pytest.FixtureRequest) -> None:
    """Each scenario starts on the whole cluster (the one the test uses: this directory's, or
    a module's own, like the replicated one's), whatever the scenario before it left down —
    restored before, not after, so that a module's last round does not start a host only for
    the teardown to stop it."""
    if "cluster" in request.fixturenames:
        whole(request.getfixturevalue("cluster"))


def whole(cluster: MultiHostCluster) -> None:
    """Starts whatever of ``cluster`` is down and waits until every host runs the fault apps
    (a no-op, but for the checks, when nothing is down)."""
    cluster.up()
    await_everywhere(cluster)


@pytest.fixture(scope="session")
def cluster() -> Iterator[MultiHostCluster]:
    with multihost_cluster(_state_dir(), hosts=len(HOSTS)) as running:
        deploy_fault_apps(running)
        yield running


def deploy_fault_apps(cluster: MultiHostCluster) -> None:
    """Deploys the relay and fanout apps, waits until every host runs them, and warms the
    stack: a fresh one is slow at first (JIT, topic metadata), and the first scenario's load
    must be a steady one."""
    client = SandClient(cluster.gateway_url, token=cluster.admin_token)
    for app in (RELAY, FANOUT):
        _DEPLOYED[app.name] = int(client.deploy(APPS / app.name, backend="process")["version"])
    await_everywhere(cluster)
    for n in range(40):
        client.invoke("relay", {"n": n, "sleep_s": 0})
    for n in range(10):
        client.invoke("fanout", {"n": n, "sleep_s": 0})


def load_of(cluster: MultiHostCluster, app: AppUnderLoad) -> Load:
    """Asynchronous load of ``app`` through ``cluster``'s nginx (not started)."""
    return Load(
        cluster.gateway_url,
        app.name,
        {
            h: cluster.config.state_dir / "hosts" / h / "logs" / "apps" / f"{app.name}.log"
            for h in HOSTS
        },
        rate=app.rate,
        sleep_s=app.sleep_s,
        token=cluster.admin_token,
    )


def run_with_faults(
    cluster: MultiHostCluster,
    name: str,
    faults: list[tuple[float, Callable[[], Struck]]],
    duration_s: float = 8,
    min_share: float = 1.0,
    apps: tuple[AppUnderLoad, ...] = (RELAY,),
    settle_s: float = 0,
) -> tuple[list[Outcome], list[Load], list[Fault]]:
    """About ``duration_s`` of asynchronous load of each of ``apps`` (at once, one caller
    each) through nginx, and at least ``settle_s`` after the last fault returned; each fault
    runs at its time (seconds after the start); then waits
    until every accepted execution ended, prints each app's outcome and checks it:

    - nothing was lost, every output is right, each app got at least ``min_share`` of its
      ``min_accepted`` calls accepted;
    - the first fault hit work: executions accepted before it had not ended when it struck
      and, when it took hosts down, some had run a grain there and went on after it;
    - no grain of an execution ran more than its first run and ``reruns_per_fault`` per
      fault.

    Returns the outcomes and loads (in the order of ``apps``) and the faults as they
    happened."""
    loads = [load_of(cluster, app) for app in apps]
    for load in loads:
        await_accepting(load)
    started = time.monotonic()
    for load in loads:
        load.start()
    happened: list[Fault] = []
    for at, fault in faults:
        time.sleep(max(0.0, at - (time.monotonic() - started)))
        began = time.time()
        struck = fault()
        happened.append(Fault(began, time.time(), struck))
    settled = time.time() - happened[-1].ended
    time.sleep(max(0.0, duration_s - (time.monotonic() - started), settle_s - settled))
    for load in loads:
        load.stop()
    first = happened[0]
    outcomes = [
        await_all(cluster.gateway_url, load, app.expected, first)
        for app, load in zip(apps, loads, strict=True)
    ]
    for app, load, outcome in zip(apps, loads, outcomes, strict=True):
        print(
            outcome.report(f"{app.name}: {name}", first.began),
            f"refused {len(load.refused)}, busy (429, retried later) {load.busy}",
            *(
                f"\n  refused at {at - first.began:+.2f} s: {why[:120]}"
                for at, why in list(zip(load.refused_at, load.refused, strict=True))[:5]
            ),
        )
    for app, load, outcome in zip(apps, loads, outcomes, strict=True):
        floor = int(app.min_accepted * min_share)
        assert outcome.accepted >= floor, f"{app.name}: too little load: {load.refused[:5]}"
        assert not outcome.lost, f"{app.name}: {len(outcome.lost)} lost, e.g. {outcome.lost[:3]}"
        assert not outcome.wrong, (app.name, outcome.wrong[:3])
        assert outcome.proof.in_flight >= 1, f"{app.name}: no execution was in flight at the fault"
        most = 1 + app.reruns_per_fault * len(faults)
        assert outcome.proof.most_runs <= most, (
            f"{app.name}: {outcome.proof.most_run} ran {outcome.proof.most_runs} times after "
            f"{len(faults)} fault(s), at most {most} expected"
        )
    if first.struck.hosts:
        # summed over the apps: on one app alone a host may, now and then, have had nothing
        on_victims = sum(o.proof.on_victims for o in outcomes)
        assert on_victims >= 1, f"{first.struck.hosts} had no execution in flight when struck"
        assert sum(o.proof.resumed for o in outcomes) >= 1, (
            f"of the {on_victims} executions in flight on {first.struck.hosts}, none went on"
        )
    return outcomes, loads, happened


def await_accepting(load: Load, in_a_row: int = 4, timeout_s: float = 90) -> None:
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
            timeout=40,
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


def _agent_logs(cluster: MultiHostCluster) -> dict[str, Path]:
    return {h: cluster.config.state_dir / "hosts" / h / "logs" / "host-agent.log" for h in HOSTS}


def recovery_after(cluster: MultiHostCluster, faults: list[Fault]) -> Recovery:
    """What the agents' logs say of the recovery after the first of ``faults``."""
    return recovery(_agent_logs(cluster), faults[0].began)


def survivors_took_over(cluster: MultiHostCluster, faults: list[Fault]) -> None:
    """Prints where the recovery time went and asserts that the hosts left alive took the
    dead ones' work over (replayed what they had taken, delivered what they had not)."""
    report = recovery_after(cluster, faults)
    print(report)
    dead = {host for fault in faults for host in fault.struck.hosts}
    by_survivors = sum(n for host, n in report.taken_over.items() if host not in dead)
    assert by_survivors >= 1, f"no survivor took over any event of {sorted(dead)}: {report}"
