"""What the overload test needs beside the faults fixtures: the Go load generator
(``tests/faults/loadgen``, built here with the standard library only), one run of it read into
records, and a sampler of every stack process's resident memory, summed per service."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from sand.cluster.config import ClusterConfig

LOADGEN_SRC = Path(__file__).resolve().parent / "loadgen"
GRAIN_WORKERS = "grain workers and instances (all hosts, PSS)"
ROOT = Path(__file__).resolve().parents[2]


def build_loadgen() -> Path:
    """``build/bin/loadgen``, built from ``tests/faults/loadgen`` (no module download)."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    out = ROOT / "build" / "bin" / "loadgen"
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([go, "build", "-o", str(out), "."], cwd=LOADGEN_SRC, check=True, timeout=300)
    return out


@dataclass(frozen=True)
class Answer:
    """One request: when it started (ms after the run's start), how long its answer took
    (ms), its status (0: no answer within the timeout), its mode, and for a 202 its id."""

    start_ms: float
    latency_ms: float
    status: int
    mode: str
    execution_id: str
    execution_status: str  # of a 200 or 202: SUCCEEDED, FAILED, RUNNING, ...
    retry_after: str


@dataclass(frozen=True)
class Run:
    """The answers of one run of the load generator, and how long it lasted (s)."""

    answers: list[Answer]
    seconds: float

    def statuses(self) -> Counter[int]:
        return Counter(a.status for a in self.answers)

    def admitted_sync_ms(self) -> list[float]:
        """Latencies of the synchronous calls answered 200, sorted."""
        return sorted(a.latency_ms for a in self.answers if a.mode == "sync" and a.status == 200)

    def accepted_async(self) -> list[str]:
        return [a.execution_id for a in self.answers if a.mode == "async" and a.status == 202]

    def sync_not_succeeded(self) -> Counter[str]:
        """The statuses of admitted synchronous calls whose execution did not succeed."""
        return Counter(
            a.execution_status
            for a in self.answers
            if a.mode == "sync" and a.status == 200 and a.execution_status != "SUCCEEDED"
        )

    def refusal_ms(self) -> list[float]:
        """Latencies of the calls answered 429, sorted: how fast a refusal comes."""
        return sorted(a.latency_ms for a in self.answers if a.status == 429)

    def goodput(self) -> float:
        """Synchronous calls answered 200 per second of the run."""
        return len(self.admitted_sync_ms()) / self.seconds


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of sorted ``values`` (nearest rank); nan when empty."""
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))]


def run_load(
    loadgen: Path,
    url: str,
    token: str,
    *,
    rate: float,
    seconds: float,
    async_every: int = 0,
    timeout_s: float = 30,
    body: str,
) -> Run:
    """``rate`` requests a second (open loop) for ``seconds``; blocks until every request was
    answered or timed out."""
    started = time.monotonic()
    done = subprocess.run(
        [
            str(loadgen),
            "-url",
            url,
            "-token",
            token,
            "-rate",
            str(rate),
            "-duration",
            str(seconds),
            "-async-every",
            str(async_every),
            "-timeout",
            str(timeout_s),
            "-body",
            body,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + timeout_s + 60,
    )
    # kept for a look afterwards (build/ is not committed)
    record = ROOT / "build" / "overload" / f"{rate:.0f}-per-s-{seconds:.0f}-s.jsonl"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(done.stdout)
    answers = []
    for line in done.stdout.splitlines():
        doc = json.loads(line)
        answers.append(
            Answer(
                start_ms=doc["start_ms"],
                latency_ms=doc["latency_ms"],
                status=doc["status"],
                mode=doc["mode"],
                execution_id=doc.get("execution_id", ""),
                execution_status=doc.get("execution_status", ""),
                retry_after=doc.get("retry_after", ""),
            )
        )
    return Run(answers, time.monotonic() - started)


def service_of(process: psutil.Process) -> str | None:
    """The stack service a process belongs to, by its command line; None for others."""
    try:
        cmdline = process.cmdline()
    except psutil.Error:
        return None
    text = " ".join(cmdline)
    for part in cmdline:
        if part.startswith("-Dsand.service="):
            return part.split("=", 1)[1]
    for marker, name in (
        ("kafka.Kafka", "kafka"),
        ("CassandraDaemon", "cassandra"),
        ("sand_worker", GRAIN_WORKERS),
        ("redis-server", "redis"),
        ("nginx", "nginx"),
    ):
        if marker in text:
            if name == "redis" and "/hosts/" in text:
                return "redis " + text.split("/hosts/", 1)[1].split("/", 1)[0]
            return name
    return None


def processes_by_service(config: ClusterConfig) -> list[tuple[psutil.Process, str]]:
    """Every process whose command line names the cluster's state dir, and their descendants,
    each with its service (``service_of``; a descendant without a service of its own counts for
    its parent's)."""
    marker = str(config.state_dir)
    roots: dict[int, str] = {}
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info.get("cmdline") or []
        if any(marker in part for part in cmdline):
            roots[process.pid] = service_of(process) or process.name()
    found: list[tuple[psutil.Process, str]] = []
    seen: set[int] = set()
    for pid, service in roots.items():
        try:
            root = psutil.Process(pid)
            family = [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
        for process in family:
            if process.pid not in seen:
                seen.add(process.pid)
                own = (service_of(process) if process.pid != pid else service) or service
                found.append((process, own))
    return found


def cpu_seconds(config: ClusterConfig) -> dict[str, float]:
    """CPU seconds (user + system, with reaped children: a worker's forked instances) each
    service and this test process (``load and test``: the Go load generator is its child) used
    so far; the difference of two readings is what a run cost, per service."""
    totals: dict[str, float] = defaultdict(float)
    me = psutil.Process()
    for process, service in [*processes_by_service(config), (me, "load and test")]:
        try:
            t = process.cpu_times()
        except psutil.Error:
            continue
        totals[service] += t.user + t.system + t.children_user + t.children_system
    return dict(totals)


@dataclass
class MemorySampler:
    """Samples, every ``every_s``, the resident memory of every process whose command line
    names the cluster's state dir and of their descendants, summed per service (``service_of``;
    a descendant without a service of its own counts for its parent's): resident memory (RSS),
    except for grain workers and their forked instances, which share most of their pages and
    are summed by PSS (each shared page divided among its sharers)."""

    config: ClusterConfig
    every_s: float = 2.0
    peaks_mb: dict[str, float] = field(default_factory=dict)
    series: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def sample(self) -> dict[str, float]:
        """The resident MB of each service now."""
        totals: dict[str, float] = defaultdict(float)
        for process, service in processes_by_service(self.config):
            try:
                if service == GRAIN_WORKERS:
                    # a worker and its forked instances share most pages: PSS adds them once
                    totals[service] += process.memory_full_info().pss / 2**20
                else:
                    totals[service] += process.memory_info().rss / 2**20
            except psutil.Error:
                continue
        return dict(totals)

    def _run(self) -> None:
        started = time.monotonic()
        while not self._stop.is_set():
            now = self.sample()
            self.series.append((time.monotonic() - started, now))
            for service, mb in now.items():
                self.peaks_mb[service] = max(self.peaks_mb.get(service, 0.0), mb)
            self._stop.wait(self.every_s)
