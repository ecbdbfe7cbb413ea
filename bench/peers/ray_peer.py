"""Ray as a peer: a private local Ray instance with 2 CPUs, on loopback only.

Hop: `hop_b.remote(hop_a.remote())`, B gets A's ObjectRef resolved to A's end time.
Pipeline: four chained `step.remote` calls, each taking the previous ObjectRef; the
client submits all four at once and `ray.get`s the last.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench.peers import common

NAME = "ray"
NUM_CPUS = 2

# Before Ray is imported: keep the instance off the network and its usage reports off.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def version() -> str:
    import ray

    return f"ray {ray.__version__} (local, {NUM_CPUS} CPUs)"


def _hop_a() -> float:
    return time.time()


def _hop_b(a_end: float) -> float:
    b_start = time.time()
    return (b_start - a_end) * 1000.0


def _step(state: dict[str, Any], name: str) -> dict[str, Any]:
    return common.run_step(name, state)


def _ping() -> str:
    common.load_grains()  # so the worker's first measured step does not import Pillow
    return "pong"


@contextmanager
def _cluster() -> Iterator[dict[str, Any]]:
    """A private Ray instance; yields the remote functions, shuts Ray down on exit."""
    import ray

    if ray.is_initialized():
        raise common.PeerStartError(f"{NAME}: Ray is already initialised in this process")
    _init(ray)
    try:
        remote = {
            "hop_a": ray.remote(_hop_a),
            "hop_b": ray.remote(_hop_b),
            "step": ray.remote(_step),
            "ping": ray.remote(_ping),
        }
        # One ping per CPU, in parallel, to start both workers and load the grains in each.
        refs = [remote["ping"].remote() for _ in range(NUM_CPUS)]
        ray.get(refs, timeout=common.START_TIMEOUT_S)
        yield remote
    finally:
        ray.shutdown()


def _init(ray: Any) -> None:
    """Start the local instance; its workers inherit PYTHONPATH to import bench.peers.*."""
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = common.worker_env()["PYTHONPATH"]
    t0 = time.monotonic()
    try:
        ray.init(
            num_cpus=NUM_CPUS,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
        )
    except Exception as exc:
        raise common.PeerStartError(f"{NAME}: ray.init failed: {exc}") from exc
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    if time.monotonic() - t0 > common.START_TIMEOUT_S:
        ray.shutdown()
        raise common.PeerStartError(f"{NAME}: ray.init took over 60 s")


def _one_hop(remote: dict[str, Any]) -> float:
    import ray

    ref = remote["hop_b"].remote(remote["hop_a"].remote())
    return float(ray.get(ref, timeout=common.RESULT_TIMEOUT_S))


def measure_hop(n: int, gap_s: float) -> list[float]:
    with _cluster() as remote:
        for _ in range(common.WARMUP):
            _one_hop(remote)
        hops = []
        for _ in range(n):
            time.sleep(gap_s)
            hops.append(_one_hop(remote))
        return hops


def _one_pipeline(remote: dict[str, Any], payload: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    import ray

    t0 = time.perf_counter()
    ref = common.start_state(payload)
    for name in common.GRAINS:
        ref = remote["step"].remote(ref, name)
    output = ray.get(ref, timeout=common.RESULT_TIMEOUT_S)
    return common.ms_since(t0), output


def measure_pipeline(n: int, payload: dict[str, Any]) -> list[tuple[float, float]]:
    with _cluster() as remote:
        for i in range(common.WARMUP):
            _, output = _one_pipeline(remote, payload)
            if i == 0 and payload == common.pipeline_input():
                common.check_output(NAME, output)
        runs = []
        for _ in range(n):
            total_ms, output = _one_pipeline(remote, payload)
            runs.append((total_ms, float(output["compute_ms"])))
        return runs
