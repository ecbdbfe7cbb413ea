"""SAND's own series for the benchmark report, measured on the running cluster through
nginx: grain hop, one-grain overhead and its breakdown, overhead against concurrency,
throughput, memory per concurrent call, the 4-grain image pipeline, bursty load, and
the cost of the asynchronous backups."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import requests
import yaml
from sand.client import SandClient

from bench.loadgen import Call, Sample, closed_loop, open_loop, percentile, poisson_schedule
from bench.stack_cpu import StackCpu

ROOT = Path(__file__).resolve().parents[1]
HOP_APP = ROOT / "bench" / "apps" / "hop"
PIPELINE_APP = ROOT / "examples" / "image-pipeline"
# Events one instance serves in the reuse-mode series (events_per_instance).
REUSE_EVENTS = 1000


def variant(app_dir: Path, workdir: Path, suffix: str, change: Any) -> Path:
    """A copy of the app under ``workdir``, named ``<name>-<suffix>``, whose manifest
    ``change`` (a function of the parsed app.yaml) altered: the same grains, side by side."""
    manifest = yaml.safe_load((app_dir / "app.yaml").read_text())
    name = f"{manifest['name']}-{suffix}"
    manifest["name"] = name
    change(manifest)
    copy = workdir / name
    shutil.copytree(app_dir, copy)
    (copy / "app.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return copy


def reuse_variant(app_dir: Path, workdir: Path, events: int = REUSE_EVENTS) -> Path:
    """The app's twin ``<name>-reuse`` whose grains all opt in to the reuse mode with
    ``events_per_instance: events``."""

    def reuse(manifest: dict[str, Any]) -> None:
        manifest["grains"] = {
            grain: {"file": file, "events_per_instance": events}
            for grain, file in manifest["grains"].items()
        }

    return variant(app_dir, workdir, "reuse", reuse)


def no_history_variant(app_dir: Path, workdir: Path) -> Path:
    """The app's twin ``<name>-nohist`` that records no execution history (decision 0018)."""
    return variant(app_dir, workdir, "nohist", lambda manifest: manifest.update(history=False))


@dataclass
class Cluster:
    """The gateway to measure through, and the token to call it with."""

    gateway: str
    token: str = field(repr=False)
    cpu: StackCpu  # the CPU of the stack behind the gateway, by part
    client: SandClient = field(init=False)

    def __post_init__(self) -> None:
        self.client = SandClient(self.gateway, token=self.token, timeout_s=300)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def post(self, url: str, body: Any) -> Call:
        """A call of the load generator: POST ``body`` to ``url``, as the cluster's caller."""
        return _post(url, body, self.headers)

    def invoke_url(self, app: str, workflow: str, **params: str) -> str:
        query = "&".join(f"{k}={v}" for k, v in {"workflow": workflow, **params}.items())
        return f"{self.gateway}/v1/apps/{app}/invoke?{query}"

    @contextmanager
    def deployed(
        self,
        app_dir: Path,
        *,
        backups: bool = True,
        remote_grains: tuple[str, ...] = (),
        placement: dict[str, Any] | None = None,
    ) -> Iterator[str]:
        app = self.client.deploy(
            app_dir, backups=backups, remote_grains=remote_grains, placement=placement
        )
        try:
            yield str(app["name"])
        finally:
            self.client.undeploy(app["name"])

    @contextmanager
    def deployed_reuse(self, app_dir: Path) -> Iterator[str]:
        """The app's reuse-mode twin (:func:`reuse_variant`), deployed for the block."""
        with (
            tempfile.TemporaryDirectory() as tmp,
            self.deployed(reuse_variant(app_dir, Path(tmp))) as app,
        ):
            yield app

    @contextmanager
    def deployed_without_history(self, app_dir: Path) -> Iterator[str]:
        """The app's twin that records no history (:func:`no_history_variant`)."""
        with (
            tempfile.TemporaryDirectory() as tmp,
            self.deployed(no_history_variant(app_dir, Path(tmp))) as app,
        ):
            yield app


def _post(url: str, body: Any, headers: dict[str, str]) -> Call:
    def call(session: requests.Session) -> Any:
        response = session.post(url, json=body, headers=headers, timeout=120)
        response.raise_for_status()
        doc = response.json()
        if doc.get("status") != "SUCCEEDED":
            raise ValueError(f"execution {doc.get('execution_id')}: {doc}")
        return doc

    return call


def warm_up(cluster: Cluster, app: str, workflow: str, count: int = 50) -> None:
    session = requests.Session()
    for _ in range(count):
        session.post(
            cluster.invoke_url(app, workflow), json={}, headers=cluster.headers, timeout=60
        )


# -- hop ---------------------------------------------------------------------------------


def hops(cluster: Cluster, app: str, n: int, gap_s: float) -> list[float]:
    """End of grain `first` to start of grain `second`, one execution at a time."""
    session = requests.Session()
    url = cluster.invoke_url(app, "main")
    values = []
    for _ in range(n):
        doc = cluster.post(url, {})(session)
        values.append(float(doc["output"]["hop_ms"]))
        time.sleep(gap_s)
    return values


# -- one-grain overhead, breakdown, concurrency, throughput --------------------------------


def overhead_ms(sample: Sample) -> float:
    return sample.latency_ms - float(sample.result["output"]["grain_ms"])


def overhead_by_clients(
    cluster: Cluster, app: str, levels: list[int], per_level: int
) -> dict[int, list[float]]:
    url = cluster.invoke_url(app, "one")
    out: dict[int, list[float]] = {}
    for clients in levels:
        samples = closed_loop(
            cluster.post(url, {}), clients, max(1, per_level // clients), f"{clients} client(s)"
        )
        out[clients] = [overhead_ms(s) for s in samples if s.ok]
    return out


def breakdown(cluster: Cluster, app: str, n: int, gap_s: float) -> dict[str, list[float]]:
    """Where the time of a traced one-grain call goes (milliseconds per step)."""
    url = cluster.invoke_url(app, "one", trace="1")
    session = requests.Session()
    steps: dict[str, list[float]] = {}

    def add(name: str, seconds: float) -> None:
        steps.setdefault(name, []).append(seconds * 1000)

    for _ in range(n):
        sent = time.time()
        doc = cluster.post(url, {})(session)
        received = time.time()
        trace = doc["trace"]
        (span,) = trace["spans"]
        add("client + nginx + frontend in", trace["frontend_in"] - sent)
        add("frontend → instance (bus, BRPOP wake)", span["took"] - trace["frontend_in"])
        add("instance: decode, engine, context", span["start"] - span["took"])
        add("grain", span["end"] - span["start"])
        add("instance: engine, encode, push", span["pushed"] - span["end"])
        add("result → client (bus, frontend, nginx)", received - span["pushed"])
        add("total", received - sent)
        time.sleep(gap_s)
    return steps


@dataclass(frozen=True)
class RatePoint:
    rate: float
    achieved: float
    p50: float
    p99: float
    errors: int
    max_lag_ms: float
    # Cores the load generator itself (this process) kept busy meanwhile: it shares the
    # machine's two cores with the stack, so what it takes the stack cannot have.
    client_cores: float = 0.0


def throughput(cluster: Cluster, app: str, rates: list[float], seconds: float) -> list[RatePoint]:
    """Open-loop Poisson load at each rate, until the system is saturated (it completes
    less than 90 % of the offered rate, or errors appear) twice in a row, so that both the
    rate where p99 passes the limit and the highest rate achieved are seen."""
    url = cluster.invoke_url(app, "one")
    points: list[RatePoint] = []
    over = 0
    for rate in rates:
        before = os.times()
        samples = open_loop(
            cluster.post(url, {}),
            poisson_schedule(rate, seconds, seed=int(rate)),
            label=f"{rate:g}/s",
        )
        after = os.times()
        ok = [s for s in samples if s.ok]
        span = max(s.sent_s + s.latency_ms / 1000 for s in samples) - min(s.sent_s for s in samples)
        latencies = [s.latency_ms for s in ok]
        point = RatePoint(
            rate=rate,
            achieved=len(ok) / span if span > 0 else 0.0,
            p50=percentile(latencies, 0.5),
            p99=percentile(latencies, 0.99),
            errors=len(samples) - len(ok),
            max_lag_ms=max(s.lag_ms for s in samples),
            client_cores=(after.user + after.system - before.user - before.system)
            / max(after.elapsed - before.elapsed, 1e-9),
        )
        points.append(point)
        saturated = point.achieved < 0.9 * rate or point.errors > 0.01 * len(samples)
        over = over + 1 if saturated else 0
        if over >= 2:
            break
    return points


# -- CPU accounting -----------------------------------------------------------------------

# Calls made before the CPU series: the JVMs' JIT compilers (C2) are still busy for the
# first thousand-odd calls after a start (measured per thread: up to 0.7 ms of Cassandra's
# and 0.3 ms of a frontend's CPU per call); the table is the warm stack's steady state.
CPU_WARM_UP_CALLS = 1000


def cpu_per_invocation(
    cluster: Cluster, app: str, n: int, gap_s: float, warm_up_calls: int = CPU_WARM_UP_CALLS
) -> dict[str, float]:
    """CPU milliseconds each part of the stack spends per one-grain invocation (one client,
    ``gap_s`` apart), and the wall time per invocation under ``wall``, after
    ``warm_up_calls`` calls that are not counted."""
    session = requests.Session()
    call = cluster.post(cluster.invoke_url(app, "one"), {})
    for _ in range(warm_up_calls):
        call(session)

    def calls() -> None:
        for _ in range(n):
            call(session)
            time.sleep(gap_s)

    spent, wall = _cpu_during(cluster, calls)
    out = {name: seconds / n * 1000 for name, seconds in spent.items()}
    out["wall"] = wall / n * 1000
    return out


def _cpu_during(cluster: Cluster, work: Callable[[], None]) -> tuple[dict[str, float], float]:
    """The CPU seconds each part of the stack spent while ``work`` ran, and its wall time."""
    before = cluster.cpu.seconds()
    t0 = time.perf_counter()
    work()
    wall = time.perf_counter() - t0
    after = cluster.cpu.seconds()
    return {name: after[name] - before.get(name, 0.0) for name in after}, wall


def idle_cpu(cluster: Cluster, seconds: float) -> dict[str, float]:
    """Milliseconds of CPU per second each part of the stack spends at rest over
    ``seconds`` (an app deployed, no call made), and the whole stack's share of one core in
    percent under ``share_of_one_core_pct`` (issue 25's target: at most 2)."""
    spent, elapsed = _cpu_during(cluster, lambda: time.sleep(seconds))
    out = {name: value / elapsed * 1000 for name, value in spent.items()}
    out["share_of_one_core_pct"] = sum(out.values()) / 10
    return out


# -- memory ----------------------------------------------------------------------------------


def sandbox_memory_mb(app: str) -> tuple[float, float]:
    """(USS, PSS) in MB summed over every process of the app's sandbox."""
    uss = pss = 0
    for process in psutil.process_iter():
        try:
            if process.environ().get("SAND_APP") == app:
                info = process.memory_full_info()
                uss += info.uss
                pss += info.pss
        except psutil.Error:
            continue
    return uss / 2**20, pss / 2**20


def memory_by_concurrency(
    cluster: Cluster, app: str, levels: list[int], hold_s: float = 4.0
) -> dict[int, tuple[float, float]]:
    """Sandbox USS/PSS with N calls of the `hold` grain in flight (0 = idle)."""
    out: dict[int, tuple[float, float]] = {0: sandbox_memory_mb(app)}
    for calls in levels:
        ids = [
            cluster.client.invoke(app, {"seconds": hold_s}, workflow="hold", wait=False)
            for _ in range(calls)
        ]
        time.sleep(min(2.0, hold_s / 2))
        out[calls] = sandbox_memory_mb(app)
        for execution in ids:
            while cluster.client.result(execution.execution_id).status == "RUNNING":
                time.sleep(0.2)
        time.sleep(0.5)
    return out


# -- pipeline -----------------------------------------------------------------------------------


def pipeline(cluster: Cluster, app: str, payload: Any, n: int) -> list[tuple[float, float]]:
    """(total ms, compute ms) per run of the image pipeline; compute = the grains' own time."""
    url = cluster.invoke_url(app, "main", trace="1")
    session = requests.Session()
    runs = []
    for _ in range(n):
        t0 = time.perf_counter()
        doc = cluster.post(url, payload)(session)
        total = (time.perf_counter() - t0) * 1000
        compute = sum((s["end"] - s["start"]) * 1000 for s in doc["trace"]["spans"])
        runs.append((total, compute))
    return runs


# -- bursty load ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bursty:
    samples: list[Sample]
    memory: list[tuple[float, float]]  # (seconds since start, sandbox USS MB)
    schedule: str


def bursty(cluster: Cluster, app: str, rate: float, seconds: float, factor: float) -> Bursty:
    bursts = [(seconds * 0.3, seconds * 0.1, factor), (seconds * 0.65, seconds * 0.1, factor)]
    arrivals = poisson_schedule(rate, seconds, seed=7, bursts=bursts)
    memory: list[tuple[float, float]] = []
    stop = threading.Event()
    t0 = time.perf_counter()

    def sample_memory() -> None:
        while not stop.is_set():
            memory.append((time.perf_counter() - t0, sandbox_memory_mb(app)[0]))
            stop.wait(0.25)

    sampler = threading.Thread(target=sample_memory, daemon=True)
    sampler.start()
    try:
        samples = open_loop(
            cluster.post(cluster.invoke_url(app, "one"), {}), arrivals, label="bursty"
        )
    finally:
        stop.set()
        sampler.join()
    described = ", ".join(f"×{f:g} for {length:g} s at {start:g} s" for start, length, f in bursts)
    return Bursty(samples, memory, f"Poisson {rate:g}/s for {seconds:g} s, bursts {described}")


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": percentile(values, 0.5),
        "p99": percentile(values, 0.99),
        "mean": statistics.fmean(values) if values else float("nan"),
        "n": float(len(values)),
    }


def dump(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=lambda o: o.__dict__))
