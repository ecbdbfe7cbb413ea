"""Neighbours that cannot starve each other (decision 0022), on the suite's real stack.

Two CPU-hog apps (their instances spin; together they could take every core of this
machine) run beside a latency app on the same host, on each backend. The hogs lowered
their CPU weight (``limits.cpu_weight: 10``, what a batch tenant does); the latency app
keeps the default. Its one-grain call keeps its p50 within 2x of its p50 alone (the
issue's bound).

Why not the hogs at the default weight too: equal weights share contended CPU equally, so
every process on the latency app's path gets half a CPU while it competes with a hog, and
its calls take about twice as long; that is the fair share, not starvation, and it sits
right at the bound (measured 1.4-2.0x for one hog at the default weight, 2.2-2.5x for
two; decision 0022). The weight is how an app gets clearly more than that.

The hogs report the CPU their instances used, so the test also checks that they did hog
(a positive control: without load the ratio would prove nothing). Deploying above the
cluster's maximum weight is refused, naming the field, the value and the limit.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sand.client import SandApiError, SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

from tests.integration.tenants import renamed_app

# quiet: the hogs' CPU share and the latency ratio mean nothing while other tests load the
# machine (make integration runs it after the parallel phase)
pytestmark = [pytest.mark.integration, pytest.mark.quiet]

SPINNER = Path(__file__).resolve().parent / "apps" / "spinner"
BACKENDS = ("process", "docker")
CALLS = 80  # per side (alone, beside the hogs), after the warm-up
BLOCKS = 4  # alternating blocks of CALLS / BLOCKS calls
WARM_UP = 20
HOGS = 2
SPINNERS = 3  # concurrent spinning calls per hog: 6, on 2 cores
BATCH_WEIGHT = 10  # the hogs' limits.cpu_weight (the default is 100)
SPIN_S = 1.0
RATIO_BOUND = 2.0  # the issue's
MIN_HOG_CORES = 0.25


@pytest.fixture(scope="module")
def client(cluster: Supervisor, cluster_config: ClusterConfig) -> SandClient:
    return SandClient(cluster_config.gateway_url, token=admin_token(cluster_config), timeout_s=120)


@pytest.fixture
def deploy(client: SandClient, tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Deploys a copy of the spinner as ``name`` (with extra ``limits``); undeploys after."""
    names: list[str] = []

    def deploy_one(name: str, backend: str, limits: str = "") -> str:
        copy = renamed_app(SPINNER, name, tmp_path)
        if limits:
            manifest = copy / "app.yaml"
            manifest.write_text(manifest.read_text() + limits)
        names.append(name)
        app = client.deploy(copy, backend=backend)
        assert app["backend"] == backend
        return name

    yield deploy_one
    for name in names:
        with contextlib.suppress(SandApiError):
            client.undeploy(name)


class Hog:
    """Keeps ``spinners`` calls of ``app`` spinning until stopped; sums the CPU seconds the
    finished ones report (each instance's own process time)."""

    def __init__(self, client: SandClient, app: str, spinners: int) -> None:
        self._client, self._app = client, app
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.cpu_s = 0.0
        self.calls = 0
        self.failures: list[str] = []
        self._threads = [threading.Thread(target=self._spin, daemon=True) for _ in range(spinners)]

    def __enter__(self) -> Hog:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)

    def reset(self) -> None:
        with self._lock:
            self.cpu_s, self.calls = 0.0, 0

    def _spin(self) -> None:
        while not self._stop.is_set():
            try:
                execution = self._client.invoke(self._app, {"spin_s": SPIN_S})
            except SandApiError as exc:
                self.failures.append(str(exc))
                continue
            with self._lock:
                if execution.status == "SUCCEEDED":
                    self.cpu_s += float(execution.output["cpu_s"])
                    self.calls += 1
                else:
                    self.failures.append(f"{execution.error}: {execution.cause}")


def latencies_ms(client: SandClient, app: str, calls: int) -> list[float]:
    """Wall time of ``calls`` sequential one-grain calls of ``app``, each checked."""
    times = []
    for n in range(calls):
        started = time.perf_counter()
        execution = client.invoke(app, {"n": n})
        times.append((time.perf_counter() - started) * 1000)
        assert execution.output == {"pong": n}, (execution.error, execution.cause)
    return times


@dataclass
class Measurement:
    """Latencies alone and beside the hogs (ms), and what the hogs did meanwhile."""

    alone: list[float] = field(default_factory=list)
    beside: list[float] = field(default_factory=list)
    hog_cpu_s: float = 0.0
    window_s: float = 0.0
    hog_calls: int = 0
    failures: list[str] = field(default_factory=list)


def measure(client: SandClient, latency: str, hogs: list[str], spinners: int) -> Measurement:
    """The latency app's calls alone and beside the spinning hogs, in alternating blocks,
    so that a drift of this shared machine during the test weighs on both sides alike."""
    m = Measurement()
    for _ in range(BLOCKS):
        m.alone += latencies_ms(client, latency, CALLS // BLOCKS)
        with contextlib.ExitStack() as stack:
            running = [stack.enter_context(Hog(client, hog, spinners)) for hog in hogs]
            time.sleep(2 * SPIN_S)  # every spinner is in its loop
            for hog in running:
                hog.reset()
            window_started = time.monotonic()
            m.beside += latencies_ms(client, latency, CALLS // BLOCKS)
            m.window_s += time.monotonic() - window_started
            time.sleep(SPIN_S)  # the spins of the window report
            m.hog_cpu_s += sum(hog.cpu_s for hog in running)
            m.hog_calls += sum(hog.calls for hog in running)
            m.failures += [f for hog in running for f in hog.failures]
    return m


@pytest.mark.timeout(600)
@pytest.mark.parametrize("backend", BACKENDS)
def test_cpuHogs_latencyAppP50StaysWithinTwiceItsP50Alone(
    client: SandClient, deploy: Callable[..., str], backend: str
) -> None:
    """Two CPU hogs at a lowered weight beside a latency app at the default one: the
    latency app's p50 with them stays within 2x of its p50 alone, and they did hog."""
    short = backend[:4]
    latency = deploy(f"nb-lat-{short}", backend)
    batch = f"  cpu_weight: {BATCH_WEIGHT}\n"
    hogs = [deploy(f"nb-hog{i}-{short}", backend, batch) for i in range(HOGS)]
    latencies_ms(client, latency, WARM_UP)
    for hog in hogs:  # their sandboxes and instances warm too, before they count
        client.invoke(hog, {"spin_s": 0.05})

    m = measure(client, latency, hogs, SPINNERS)
    alone, beside = m.alone, m.beside
    hog_cpu_s, window_s, hog_calls, failures = m.hog_cpu_s, m.window_s, m.hog_calls, m.failures

    p50_alone = statistics.median(alone)
    p50_beside = statistics.median(beside)
    ratio = p50_beside / p50_alone
    hog_cores = hog_cpu_s / window_s
    print(
        f"{backend}: latency app p50 alone {p50_alone:.1f} ms, beside {HOGS} hogs "
        f"{p50_beside:.1f} ms, ratio {ratio:.2f} ({len(alone)} + {len(beside)} calls in "
        f"{BLOCKS} alternating blocks); p90 alone {_p90(alone):.1f} ms, beside "
        f"{_p90(beside):.1f} ms; the hogs used {hog_cpu_s:.1f} CPU-s ({hog_cores:.2f} cores) "
        f"in {hog_calls} calls during the {window_s:.1f} s beside them"
    )
    assert not failures, failures[:3]
    # positive control: the hogs did hog. On a quiet machine they take both cores; other
    # work on a shared one leaves them less (the root cgroup's tasks
    # each weigh as much as all sandboxes together), so the bound is a quarter of a core,
    # far above what the latency app's calls use. Each spin reports its own process time.
    assert hog_cores >= MIN_HOG_CORES, f"the hogs used only {hog_cores:.2f} cores"
    assert ratio <= RATIO_BOUND


@pytest.mark.timeout(300)
def test_deploy_cpuWeightAboveTheClustersMaximum_isRefusedNamingFieldValueAndLimit(
    client: SandClient, cluster_config: ClusterConfig, deploy: Callable[..., str]
) -> None:
    """limits.cpu_weight above sandbox.max_cpu_weight, or memory_mb above max_memory_mb, is
    refused at deploy with both named; at the maximum the deploy goes through (with the
    effective limits in the app's metadata)."""
    operator = cluster_config.sandbox_limits
    too_much = (
        f"  cpu_weight: {operator.max_cpu_weight + 1}\n  memory_mb: {operator.max_memory_mb + 1}\n"
    )
    with pytest.raises(SandApiError) as refused:
        deploy("nb-greedy", "process", too_much)
    message = str(refused.value)
    assert refused.value.status == 400, message
    assert (
        f"limits.cpu_weight is {operator.max_cpu_weight + 1}, above this cluster's maximum of "
        f"{operator.max_cpu_weight} (sandbox.max_cpu_weight" in message
    )
    assert (
        f"limits.memory_mb is {operator.max_memory_mb + 1}, above this cluster's maximum of "
        f"{operator.max_memory_mb} (sandbox.max_memory_mb" in message
    )

    modest = f"  cpu_weight: {operator.max_cpu_weight}\n  memory_mb: 128\n"
    app = deploy("nb-modest", "process", modest)
    limits = client.app(app)["limits"]
    assert (limits["cpu_weight"], limits["memory_mb"]) == (operator.max_cpu_weight, 128)
    assert client.invoke(app, {"n": 1}).output == {"pong": 1}


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]
