"""Steady asynchronous load through nginx, and the bookkeeping of a fault test: which
executions were accepted, how each ended, which grains ran twice, and the evidence that a
fault hit work in flight (the run lines the fault apps print, with their time, read from the
app's log on every host)."""

from __future__ import annotations

import re
import statistics
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

# what tests/faults/apps/*/grains print once per run: execution, grain (and Map item), pid,
# epoch ms
RUN_LINE = re.compile(r"SAND-RUN (\S+) (\S+) \d+ (\d+)")


@dataclass
class Accepted:
    execution_id: str
    index: int
    at: float  # epoch seconds


@dataclass
class Load:
    """Invokes ``app`` asynchronously every ``1 / rate`` s from a thread until stopped, as
    the holder of ``token``. A 429 (admission control, decision 0023: nothing was queued) is
    what a well-behaved client waits out: counted in ``busy``, and the next call waits for
    its Retry-After. Other answers than 202 are kept as refusals (a fault may refuse, never
    lose)."""

    gateway: str
    app: str
    run_logs: dict[str, Path]  # the app's log (its sandboxes' output) by host
    rate: float = 20.0
    sleep_s: float = 0.05
    token: str = field(default="", repr=False)
    accepted: list[Accepted] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    refused_at: list[float] = field(default_factory=list)  # epoch seconds
    busy: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def _refuse(self, why: str) -> None:
        self.refused.append(why)
        self.refused_at.append(time.time())

    def session(self) -> requests.Session:
        """A session that sends the load's token."""
        session = requests.Session()
        if self.token:
            session.headers["Authorization"] = f"Bearer {self.token}"
        return session

    def _run(self) -> None:
        session = self.session()
        index = 0
        next_at = time.monotonic()
        while not self._stop.is_set():
            body = {"n": index, "sleep_s": self.sleep_s}
            pause = 0.0
            try:
                response = session.post(
                    f"{self.gateway}/v1/apps/{self.app}/invoke",
                    params={"mode": "async"},
                    json=body,
                    # past the gateway's 30 s wait for a backup's acknowledgement (a 503 then)
                    timeout=40,
                )
                if response.status_code == 202:
                    doc = response.json()
                    self.accepted.append(Accepted(doc["execution_id"], index, time.time()))
                elif response.status_code == 429:
                    self.busy += 1
                    pause = float(response.headers.get("Retry-After") or 1)
                else:
                    self._refuse(f"{response.status_code} {response.text[:200]}")
            except requests.RequestException as exc:
                self._refuse(f"no answer: {exc}")
            index += 1
            next_at = max(next_at + 1 / self.rate, time.monotonic() + pause)
            self._stop.wait(max(0.0, next_at - time.monotonic()))


@dataclass(frozen=True)
class Run:
    """One run of a grain, as a fault app's run line says: the execution, the grain (with
    its Map item), the host whose log has the line, and when it started (epoch ms)."""

    execution_id: str
    grain: str
    host: str
    at_ms: int


def read_runs(run_logs: dict[str, Path]) -> list[Run]:
    return [
        Run(match[1], match[2], host, int(match[3]))
        for host, log in run_logs.items()
        if log.exists()
        for match in RUN_LINE.finditer(log.read_text(errors="replace"))
    ]


@dataclass(frozen=True)
class Struck:
    """What a fault's action took down: hosts whole (their work in flight must go on
    elsewhere or after their restart) and the pids it killed."""

    hosts: tuple[str, ...] = ()
    pids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Fault:
    """A fault as it happened: when its action began and returned (epoch s; a restart
    returns when the service is back) and what it took down."""

    began: float
    ended: float
    struck: Struck


@dataclass(frozen=True)
class Evidence:
    """What proves that a fault hit work, from the executions accepted before it began:
    ``in_flight`` had not ended when it struck; ``on_victims`` of them had run a grain on a
    host it took down (before it struck); ``resumed`` of those ran a grain after it (their
    work went on, on a survivor or the restarted host). ``most_runs``: the most times one
    grain of one execution ran (1 when nothing ran twice), ``most_run`` that grain,
    ``duplicated`` the runs past the first of every grain of every execution.
    ``added_s``: the time the fault added to the work in flight on its hosts — the latest
    end of such an execution past when it would have ended at the steady latency (the
    median, acceptance to end, of the executions that ended before the fault); None when
    there is no such execution or no steady latency to compare with."""

    in_flight: int
    on_victims: int
    resumed: int
    most_runs: int
    most_run: tuple[str, str] | None = None
    duplicated: int = 0
    added_s: float | None = None


def evidence(
    accepted: list[Accepted],
    finished_ms: dict[str, int],
    runs: list[Run],
    fault: Fault,
) -> Evidence:
    """The evidence for ``fault`` (the first of a scenario: the work in flight when it struck).
    ``finished_ms``: when each ended execution ended (epoch ms)."""
    struck_ms = fault.began * 1000
    in_flight = {
        a.execution_id
        for a in accepted
        if a.at < fault.began and finished_ms.get(a.execution_id, 0) > struck_ms
    }
    victims = set(fault.struck.hosts)
    on_victims = {
        r.execution_id
        for r in runs
        if r.execution_id in in_flight and r.host in victims and r.at_ms < struck_ms
    }
    resumed = {r.execution_id for r in runs if r.execution_id in on_victims and r.at_ms > struck_ms}
    mine = {a.execution_id for a in accepted}
    per_grain = Counter((r.execution_id, r.grain) for r in runs if r.execution_id in mine)
    most = per_grain.most_common(1)
    steady = [
        finished_ms[a.execution_id] / 1000 - a.at
        for a in accepted
        if 0 < finished_ms.get(a.execution_id, 0) <= struck_ms
    ]
    added = None
    if steady and on_victims:
        latency = statistics.median(steady)
        added = max(
            finished_ms[a.execution_id] / 1000 - (a.at + latency)
            for a in accepted
            if a.execution_id in on_victims
        )
    return Evidence(
        in_flight=len(in_flight),
        on_victims=len(on_victims),
        resumed=len(resumed),
        most_runs=most[0][1] if most else 0,
        most_run=most[0][0] if most else None,
        duplicated=sum(n - 1 for n in per_grain.values()),
        added_s=added,
    )


@dataclass
class Outcome:
    accepted: int
    completed: int
    lost: list[str]
    wrong: list[str]
    # the last end of an execution accepted before the fault (epoch ms): its work was on the
    # hosts when the fault struck, so this is when recovery was over
    last_recovered_ms: int
    proof: Evidence

    def report(self, name: str, fault_at: float) -> str:
        recovery = self.last_recovered_ms / 1000 - fault_at
        p = self.proof
        added = "-" if p.added_s is None else f"{p.added_s:.2f} s"
        return (
            f"{name}: accepted {self.accepted}, completed {self.completed}, "
            f"lost {len(self.lost)}, wrong {len(self.wrong)}, duplicated grain runs "
            f"{p.duplicated} (at most {p.most_runs} runs of one grain: {p.most_run}), in "
            f"flight at the fault {p.in_flight} (on the hosts it took down {p.on_victims}, went "
            f"on after it {p.resumed}; time the fault added to them {added}), fault -> last "
            f"result of an execution accepted before it {recovery:.2f} s"
        )


def await_all(
    gateway: str, load: Load, expected: dict[str, Any], fault: Fault, timeout_s: float = 90
) -> Outcome:
    """Polls every accepted execution until it ended or ``timeout_s`` passed; ``fault`` is
    the scenario's first. An execution is right when it succeeded, its output has every
    field of ``expected`` with that value, and ``n`` is its input's."""
    session = load.session()
    pending = {a.execution_id: a for a in load.accepted}
    ended: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout_s
    while pending and time.monotonic() < deadline:
        for execution_id in list(pending):
            try:
                response = session.get(f"{gateway}/v1/executions/{execution_id}", timeout=10)
            except requests.RequestException:
                continue
            if response.status_code == 200 and response.json().get("status") != "RUNNING":
                ended[execution_id] = response.json()
                del pending[execution_id]
        if pending:
            time.sleep(0.5)
    wrong = []
    for a in load.accepted:
        doc = ended.get(a.execution_id)
        if doc is None:
            continue
        output = doc.get("output") or {}
        if doc.get("status") != "SUCCEEDED" or any(output.get(k) != v for k, v in expected.items()):
            wrong.append(f"{a.execution_id}: {doc}")
        elif output.get("n") != a.index:
            wrong.append(f"{a.execution_id}: input {a.index}, output {output}")
    finished_ms = {eid: int(doc.get("finished_ms") or 0) for eid, doc in ended.items()}
    return Outcome(
        accepted=len(load.accepted),
        completed=len(ended),
        lost=sorted(pending),
        wrong=wrong,
        last_recovered_ms=max(
            (
                finished_ms[a.execution_id]
                for a in load.accepted
                if a.at <= fault.began and a.execution_id in finished_ms
            ),
            default=0,
        ),
        proof=evidence(load.accepted, finished_ms, read_runs(load.run_logs), fault),
    )


@dataclass(frozen=True)
class Recovery:
    """What the agents' logs say after a fault: when partitions first moved and when the
    first and last of a lost host's events was taken over (seconds after the fault), each
    host's count of events taken over (replayed when the lost host had taken them, delivered
    when it had not), and how many it skipped because their execution had ended since they
    were made (decision 0045)."""

    moved_s: float | None
    first_taken_s: float | None
    last_taken_s: float | None
    taken_over: dict[str, int]
    skipped: int = 0

    def __str__(self) -> str:
        def shown(value: float | None) -> str:
            return "never" if value is None else f"+{value:.2f} s"

        counts = ", ".join(f"{host} {n}" for host, n in sorted(self.taken_over.items()))
        return (
            f"after the fault: partitions moved {shown(self.moved_s)}, first taken over "
            f"{shown(self.first_taken_s)}, last {shown(self.last_taken_s)}, "
            f"events taken over {sum(self.taken_over.values())} ({counts}), "
            f"skipped as ended {self.skipped}"
        )


# what an agent logs once per event of a lost host it takes over (GlobalBus)
TAKEN_OVER = (
    'msg="replayed an event of a lost host"',
    'msg="delivered an event a lost host never took"',
)
# ... and once per event of a lost host whose execution had ended since (LostWork)
SKIPPED = 'msg="skipped an event of a lost host: its execution has ended"'


def recovery(agent_logs: dict[str, Path], fault_at: float) -> Recovery:
    """Reads, from each host's agent log, what happened after ``fault_at`` (epoch s): where
    the recovery time goes, and which agents took lost work over."""
    moved: list[float] = []
    taken: list[float] = []
    taken_over: dict[str, int] = {}
    skipped = 0
    for host, log in agent_logs.items():
        taken_over[host] = 0
        if not log.exists():
            continue
        for line in log.read_text(errors="replace").splitlines():
            if not line.startswith("ts="):
                continue
            try:
                at = datetime.fromisoformat(line[3:].split(" ", 1)[0].replace("Z", "+00:00"))
            except ValueError:
                continue
            seconds = at.timestamp() - fault_at
            if seconds < 0:
                continue
            if 'msg="partitions assigned"' in line:
                moved.append(seconds)
            elif any(marker in line for marker in TAKEN_OVER):
                taken.append(seconds)
                taken_over[host] += 1
            elif SKIPPED in line:
                skipped += 1
    return Recovery(
        moved_s=min(moved, default=None),
        first_taken_s=min(taken, default=None),
        last_taken_s=max(taken, default=None),
        taken_over=taken_over,
        skipped=skipped,
    )
