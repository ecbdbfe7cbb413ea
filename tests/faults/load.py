"""Steady asynchronous load through nginx, and the bookkeeping of a fault test: which
executions were accepted, how each ended, which grains ran twice (the run lines the fault
apps print, read from their logs on every host)."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

# what tests/faults/apps/*/grains print once per run: execution, grain (and Map item), pid
RUN_LINE = re.compile(r"SAND-RUN (\S+) (\S+) \d+")


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
    run_logs: list[Path]  # the app's log on every host (its sandboxes' output)
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
                    timeout=15,
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


@dataclass
class Outcome:
    accepted: int
    completed: int
    lost: list[str]
    wrong: list[str]
    duplicated: int
    # the last end of an execution accepted before the kill (epoch ms): its work was on the
    # hosts when one died, so this is when recovery was over
    last_recovered_ms: int

    def report(self, name: str, kill_at: float) -> str:
        recovery = self.last_recovered_ms / 1000 - kill_at
        return (
            f"{name}: accepted {self.accepted}, completed {self.completed}, "
            f"lost {len(self.lost)}, wrong {len(self.wrong)}, duplicated grain runs "
            f"{self.duplicated}, kill -> last result of an execution accepted before it "
            f"{recovery:.2f} s"
        )


def await_all(
    gateway: str, load: Load, expected: dict[str, Any], kill_at: float, timeout_s: float = 90
) -> Outcome:
    """Polls every accepted execution until it ended or ``timeout_s`` passed; ``kill_at``
    (epoch s) is when the first host was killed. An execution is right when it succeeded,
    its output has every field of ``expected`` with that value, and ``n`` is its input's."""
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
    runs = Counter(
        (match[1], match[2])
        for log in load.run_logs
        if log.exists()
        for match in RUN_LINE.finditer(log.read_text(errors="replace"))
    )
    accepted_ids = {a.execution_id for a in load.accepted}
    duplicated = sum(n - 1 for (execution, _), n in runs.items() if execution in accepted_ids)
    return Outcome(
        accepted=len(load.accepted),
        completed=len(ended),
        lost=sorted(pending),
        wrong=wrong,
        duplicated=duplicated,
        last_recovered_ms=max(
            (
                int(ended[a.execution_id].get("finished_ms") or 0)
                for a in load.accepted
                if a.at <= kill_at and a.execution_id in ended
            ),
            default=0,
        ),
    )


def recovery_timeline(agent_logs: list[Path], kill_at: float) -> str:
    """When, after ``kill_at`` (epoch s), the surviving agents' logs say their partitions
    moved and they replayed lost work: where the recovery time goes."""
    moved: list[float] = []
    replayed: list[float] = []
    for log in agent_logs:
        if not log.exists():
            continue
        for line in log.read_text(errors="replace").splitlines():
            if not line.startswith("ts="):
                continue
            try:
                at = datetime.fromisoformat(line[3:].split(" ", 1)[0].replace("Z", "+00:00"))
            except ValueError:
                continue
            seconds = at.timestamp() - kill_at
            if seconds < 0:
                continue
            if 'msg="partitions assigned"' in line:
                moved.append(seconds)
            elif 'msg="replayed an event of a lost host"' in line:
                replayed.append(seconds)

    def shown(values: list[float], pick: Any) -> str:
        return f"+{pick(values):.2f} s" if values else "never"

    return (
        f"after the kill: partitions moved {shown(moved, min)}, first replay "
        f"{shown(replayed, min)}, last replay {shown(replayed, max)}, "
        f"{len(replayed)} events replayed"
    )
