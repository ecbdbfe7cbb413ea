"""The soak (issue 26; `make test-soak`, not in `make test`): the replicated three-host stack
(`sand up --hosts 3 --replicated`) under mixed load — the chain and the fan-out invoked
asynchronously, the chain also synchronously — for ``SAND_SOAK_S`` seconds (30 minutes),
with a random fault every 2–4 minutes: a broker killed, a Cassandra node killed, a whole host
killed, a host killed while another one killed just before is still coming back, or a host
cut off the network for 10 s (its link down, nothing killed).

The load runs in segments, one per fault: each segment's calls are followed to their end
while the next segment's load already runs, so the load never stops, and each fault gets its
own line: accepted, completed, lost (must be 0), wrong, duplicated grain runs, and the time
it added to the work in flight on the hosts it took down. Every service's resident memory
(its process tree) is read 5 minutes in and at the end; the end must be within 1.2x.

Its own cluster (build/test-state-soak, ports + 800)."""

from __future__ import annotations

import os
import random
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.faults.conftest import (
    FANOUT,
    HOSTS,
    RELAY,
    await_accepting,
    await_everywhere,
    deploy_fault_apps,
    load_of,
)
from tests.faults.kills import cut_host, kill_host, kill_service
from tests.faults.load import Fault, Load, Outcome, Struck, await_all
from tests.integration.multihost import MultiHostCluster, multihost_cluster

pytestmark = [pytest.mark.integration, pytest.mark.faults, pytest.mark.soak]

SOAK_S = float(os.environ.get("SAND_SOAK_S", "1800"))
MEMORY_MARK_S = min(300.0, SOAK_S / 4)
MEMORY_GROWTH = 1.2
# a third of the fault tests' rates: 30 minutes of the full rates are ~45 000 executions to
# follow, and the soak is about time, not throughput
SOAK_RELAY = replace(RELAY, rate=RELAY.rate / 3, reruns_per_fault=4)
SOAK_FANOUT = replace(FANOUT, rate=FANOUT.rate / 2.5, reruns_per_fault=4)
SYNC_RATE = 2.0  # synchronous calls of the chain per second, one caller
CUT_S = 10.0


def _state_dir() -> Path:
    default = Path(__file__).resolve().parents[2] / "build" / "test-state-soak"
    return Path(os.environ.get("SAND_TEST_STATE_SOAK", default))


@pytest.fixture(scope="module")
def cluster() -> Iterator[MultiHostCluster]:
    with multihost_cluster(
        _state_dir(), hosts=len(HOSTS), port_offset=800, cluster={"replicated": True}
    ) as running:
        deploy_fault_apps(running)
        yield running


# -- faults ------------------------------------------------------------------------------


def _restore(cluster: MultiHostCluster) -> None:
    """Starts whatever a fault took down and waits until every host runs the apps again."""
    cluster.up()
    await_everywhere(cluster, (SOAK_RELAY, SOAK_FANOUT), timeout_s=240)


@dataclass(frozen=True)
class SoakFault:
    name: str
    act: Callable[[MultiHostCluster, list[str]], Struck]  # takes the hosts, in a random order


def _broker(cluster: MultiHostCluster, hosts: list[str]) -> Struck:
    struck = kill_service(cluster, f"{hosts[0]}/kafka")
    _restore(cluster)
    return struck


def _node(cluster: MultiHostCluster, hosts: list[str]) -> Struck:
    struck = kill_service(cluster, f"{hosts[0]}/cassandra")
    _restore(cluster)
    return struck


def _host(cluster: MultiHostCluster, hosts: list[str]) -> Struck:
    struck = kill_host(cluster, hosts[0])
    _restore(cluster)
    return struck


def _host_during_recovery(cluster: MultiHostCluster, hosts: list[str]) -> Struck:
    """A host killed, started again, and a second host killed while the first comes back
    (its broker catching up, its node rejoining): with three hosts, killing the second
    before the first is back would leave no majority, which the promise does not cover."""
    first = kill_host(cluster, hosts[0])
    cluster.up()
    second = kill_host(cluster, hosts[1])
    _restore(cluster)
    return Struck(hosts=first.hosts + second.hosts, pids=first.pids + second.pids)


def _partition(cluster: MultiHostCluster, hosts: list[str]) -> Struck:
    struck = cut_host(cluster, hosts[0], CUT_S)
    _restore(cluster)
    return struck


FAULTS = [
    SoakFault("broker killed", _broker),
    SoakFault("node killed", _node),
    SoakFault("host killed", _host),
    SoakFault("host killed while another comes back", _host_during_recovery),
    SoakFault(f"host cut off for {CUT_S:.0f} s", _partition),
]


# -- load --------------------------------------------------------------------------------


@dataclass
class SyncLoad:
    """Invokes the chain synchronously every ``1 / rate`` s: each answer is the execution's
    output (checked), or 202 (it outlived the wait: followed at the end), or a refusal."""

    gateway: str
    token: str
    rate: float
    answered: int = 0
    wrong: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    outlived: list[str] = field(default_factory=list)  # execution ids answered 202
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(90)

    def _run(self) -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {self.token}"
        n = 0
        while not self._stop.is_set():
            try:
                response = session.post(
                    f"{self.gateway}/v1/apps/relay/invoke",
                    params={"mode": "sync", "timeout_s": 30},
                    json={"n": n, "sleep_s": SOAK_RELAY.sleep_s},
                    timeout=75,
                )
                doc = response.json() if response.content else {}
                if response.status_code == 200:
                    self.answered += 1
                    output = doc.get("output") or {}
                    if doc.get("status") != "SUCCEEDED" or output.get("n") != n:
                        self.wrong.append(f"input {n}: {doc}")
                elif response.status_code == 202:
                    self.outlived.append(doc["execution_id"])
                elif response.status_code == 429:
                    self._stop.wait(float(response.headers.get("Retry-After") or 1))
                else:
                    self.refused.append(f"{response.status_code} {response.text[:160]}")
            except (requests.RequestException, ValueError) as exc:
                self.refused.append(f"no answer: {exc}")
            n += 1
            self._stop.wait(1 / self.rate)


@dataclass
class Segment:
    """A few minutes of load around one fault, and what became of it."""

    fault_name: str
    fault: Fault | None = None
    outcomes: dict[str, Future[Outcome]] = field(default_factory=dict)
    loads: dict[str, Load] = field(default_factory=dict)


def _memory(cluster: MultiHostCluster) -> dict[str, float]:
    return {s.name: s.rss_mb for s in cluster.supervisor.status() if s.rss_mb is not None}


def _row(segment: Segment, app: str, outcome: Outcome) -> str:
    p = outcome.proof
    added = "-" if p.added_s is None else f"{p.added_s:.2f}"
    return (
        f"| {segment.fault_name} | {app} | {outcome.accepted} | {outcome.completed} | "
        f"{len(outcome.lost)} | {len(outcome.wrong)} | {p.duplicated} (max {p.most_runs}) | "
        f"{p.in_flight}/{p.on_victims}/{p.resumed} | {added} | "
        f"{len(segment.loads[app].refused)} |"
    )


@pytest.mark.timeout(int(SOAK_S) + 1800)
def test_soak_mixedLoadWithAFaultEveryFewMinutes_nothingLost_memoryFlat(
    cluster: MultiHostCluster,
) -> None:
    rng = random.Random(int(os.environ.get("SAND_SOAK_SEED", time.time())))
    apps = (SOAK_RELAY, SOAK_FANOUT)
    sync = SyncLoad(cluster.gateway_url, cluster.admin_token, SYNC_RATE)
    segments: list[Segment] = []
    memory_at_mark: dict[str, float] = {}
    started = time.monotonic()
    sync.start()
    with ThreadPoolExecutor(max_workers=4) as followers:
        while time.monotonic() - started < SOAK_S:
            soak_fault = rng.choice(FAULTS)
            segment = Segment(soak_fault.name)
            segment.loads = {app.name: load_of(cluster, app) for app in apps}
            for load in segment.loads.values():
                await_accepting(load)
                load.start()
            length = rng.uniform(120, 240)
            seg_started = time.monotonic()
            time.sleep(rng.uniform(20, 60))  # steady load first: the latency to compare with
            if not memory_at_mark and time.monotonic() - started >= MEMORY_MARK_S:
                memory_at_mark = _memory(cluster)
            hosts = rng.sample(HOSTS, len(HOSTS))
            began = time.time()
            struck = soak_fault.act(cluster, hosts)
            segment.fault = Fault(began, time.time(), struck)
            print(f"+{time.monotonic() - started:.0f} s: {soak_fault.name} {struck}", flush=True)
            time.sleep(max(20.0, length - (time.monotonic() - seg_started)))
            if not memory_at_mark and time.monotonic() - started >= MEMORY_MARK_S:
                memory_at_mark = _memory(cluster)
            for load in segment.loads.values():
                load.stop()
            for app in apps:
                segment.outcomes[app.name] = followers.submit(
                    await_all,
                    cluster.gateway_url,
                    segment.loads[app.name],
                    app.expected,
                    segment.fault,
                    240,
                )
            segments.append(segment)
        sync.stop()
        memory_at_end = _memory(cluster)
        results = [
            (segment, app, segment.outcomes[app].result())
            for segment in segments
            for app in (a.name for a in apps)
        ]
    outlived = _follow(cluster, sync.outlived)

    print(
        "\n| fault | app | accepted | completed | lost | wrong | duplicated grain runs "
        "| in flight / on the victims / went on | time added (s) | refused |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for segment, app, outcome in results:
        print(_row(segment, app, outcome))
    print(
        f"\nsync: answered {sync.answered}, wrong {len(sync.wrong)}, outlived the wait "
        f"{len(sync.outlived)} (ended: {outlived['ended']}, wrong {outlived['wrong']}), "
        f"refused {len(sync.refused)} {sync.refused[:3]}"
    )
    assert memory_at_mark, "the soak ended before its memory mark"
    growth = {
        name: (memory_at_mark[name], memory_at_end.get(name, 0.0))
        for name in sorted(memory_at_mark)
    }
    print("\n| service | RSS at the mark (MB) | at the end (MB) | ratio |\n|---|---|---|---|")
    for name, (mark, end) in growth.items():
        print(f"| {name} | {mark:.0f} | {end:.0f} | {end / mark:.2f} |")
    added = [o.proof.added_s for _, _, o in results if o.proof.added_s is not None]
    if added:
        print(f"time added: median {statistics.median(added):.2f} s, max {max(added):.2f} s")

    lost = [(s.fault_name, app, o.lost[:3]) for s, app, o in results if o.lost]
    assert not lost, f"accepted executions lost: {lost}"
    wrong = [(s.fault_name, app, o.wrong[:2]) for s, app, o in results if o.wrong]
    assert not wrong and not sync.wrong and not outlived["wrong"], (wrong, sync.wrong[:3])
    assert outlived["ended"] == len(sync.outlived), "a synchronous call's execution never ended"
    for segment, app, outcome in results:
        assert segment.fault is not None
        bound = 1 + SOAK_RELAY.reruns_per_fault * max(1, len(segment.fault.struck.hosts))
        assert outcome.proof.most_runs <= bound, (segment.fault_name, app, outcome.proof)
    assert sum(o.accepted for _, _, o in results) >= len(segments) * 100, "too little load"
    grown = {n: m for n, m in growth.items() if m[1] > MEMORY_GROWTH * m[0]}
    assert not grown, f"resident memory grew past {MEMORY_GROWTH}x: {grown}"


def _follow(cluster: MultiHostCluster, execution_ids: list[str]) -> dict[str, Any]:
    """Waits for the executions of synchronous calls that outlived their wait."""
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {cluster.admin_token}"
    ended, wrong = 0, 0
    deadline = time.monotonic() + 240
    pending = list(execution_ids)
    while pending and time.monotonic() < deadline:
        still = []
        for execution_id in pending:
            try:
                doc = session.get(
                    f"{cluster.gateway_url}/v1/executions/{execution_id}", timeout=10
                ).json()
            except (requests.RequestException, ValueError):
                doc = {"status": "RUNNING"}  # asked again on the next pass
            if doc.get("status") == "RUNNING":
                still.append(execution_id)
            else:
                ended += 1
                wrong += doc.get("status") != "SUCCEEDED"
        pending = still
        if pending:
            time.sleep(1)
    return {"ended": ended, "wrong": wrong}
