"""Micro-benchmarks behind the SAND paper's Fig. 5a (sandbox start) and Fig. 5b (bus latency).

Run from the repository root against a running cluster (`sand up`)::

    PYTHONPATH=/work/main .venv/bin/python bench/micro.py

Fig. 5a, ``sandbox_start(n)`` -> latencies in ms per series:

* ``docker run``: create + start a container from the cluster's base image running
  ``python3 -c pass`` and wait for it to exit (Docker Engine API through the docker SDK), timed
  from before create to the exit; removal is not timed. Default (bridge) network, as ``docker run``.
* ``docker run (network none)``: the same with ``network_mode=none``, as SAND's sandboxes run.
* ``docker exec true`` / ``docker exec python3``: exec create + start + wait (until exec inspect
  reports it stopped, exit code checked) in one long-running container.
* ``exec python``: ``subprocess.run([sys.executable, "-c", "pass"])`` on the host.
* ``fork python (warm worker)``: in a fresh interpreter that imported what a grain worker imports,
  then ``gc.collect(); gc.freeze()``: ``os.fork()`` -> child ``os._exit(0)`` -> ``os.waitpid``.

Fig. 5b, ``bus_latency(n, gap_s)`` -> one-way latencies in ms of a 200-byte message carrying its
send time (wall-clock epoch, ``time.time()`` / Java ``Instant.now()``), one message at a time: the
producer waits until the consumer has received the previous message, sleeps ``gap_s``, sends.

* ``python redis``: LPUSH in this process, BRPOP in a spawned process (local bus, unix socket).
* ``python kafka``: confluent-kafka Producer (``linger.ms=0``, ``acks=1``, flush per message)
  in this process, Consumer in a spawned process, assigned at the end of every partition of
  ``sand.bench.latency`` before the producer starts (``fetch.wait.max.ms=1``,
  ``fetch.min.bytes=1``).
* ``java redis`` / ``java kafka``: the same with Lettuce / kafka-clients, from
  ``bench/java`` (producer and consumer are two threads of one JVM).

The first ``WARMUP`` messages of each bus series, and the first start of each sandbox series, are
discarded. Containers created here carry the label ``dev.sand.bench=1`` and are always removed.
"""

from __future__ import annotations

import contextlib
import glob
import json
import math
import os
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import redis
from sand.cluster.config import ClusterConfig, load_config

from bench.bus_latency import BenchError, bus_latency

__all__ = ["BenchError", "bus_latency", "sandbox_start", "versions", "warm_fork"]

BENCH_LABELS = {"dev.sand.bench": "1"}
REPO = Path(__file__).resolve().parent.parent

# What a SAND grain worker imports before it forks instances.
WORKER_IMPORTS = (
    "sand_worker.worker",
    "sand_worker.instance",
    "sand.app",
    "sand_workflows.engine",
    "redis",
    "yaml",
)


# --------------------------------------------------------------------------------------------
# Fig. 5a: sandbox start
# --------------------------------------------------------------------------------------------


def _docker(c: ClusterConfig) -> docker.DockerClient:
    try:
        client = docker.DockerClient(base_url=c.docker_url, timeout=120)
        client.ping()
        client.images.get(c.base_image)
    except docker.errors.ImageNotFound as e:
        raise BenchError(f"docker at {c.docker_url}: image {c.base_image} not found") from e
    except Exception as e:
        raise BenchError(f"docker at {c.docker_url}: {e}") from e
    return client


def _remove(client: docker.DockerClient, container_id: str) -> None:
    with contextlib.suppress(docker.errors.NotFound):
        client.api.remove_container(container_id, force=True)


def _docker_run(
    client: docker.DockerClient, image: str, n: int, network_mode: str | None
) -> list[float]:
    samples: list[float] = []
    for i in range(n + 1):  # the first start warms the page cache and is dropped
        container_id: str | None = None
        try:
            t0 = time.perf_counter()
            container = client.containers.create(
                image,
                ["python3", "-c", "pass"],
                labels=BENCH_LABELS,
                network_mode=network_mode,
            )
            container_id = container.id
            container.start()
            status = container.wait(timeout=60)
            t1 = time.perf_counter()
            if status.get("StatusCode") != 0:
                raise BenchError(f"docker run {image} python3 -c pass: exit status {status}")
        finally:
            if container_id is not None:
                _remove(client, container_id)
        if i > 0:
            samples.append((t1 - t0) * 1000)
    return samples


def _docker_exec(
    client: docker.DockerClient, container_id: str, cmd: list[str], n: int
) -> list[float]:
    api = client.api
    samples: list[float] = []
    for i in range(n + 1):
        t0 = time.perf_counter()
        exec_id = api.exec_create(container_id, cmd, stdout=True, stderr=True)["Id"]
        output = api.exec_start(exec_id)
        while True:
            info = api.exec_inspect(exec_id)
            if not info["Running"]:
                break
        t1 = time.perf_counter()
        if info["ExitCode"] != 0:
            raise BenchError(f"docker exec {cmd}: exit code {info['ExitCode']}: {output!r}")
        if i > 0:
            samples.append((t1 - t0) * 1000)
    return samples


def _exec_python(n: int) -> list[float]:
    samples: list[float] = []
    for i in range(n + 1):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        t1 = time.perf_counter()
        if i > 0:
            samples.append((t1 - t0) * 1000)
    return samples


_FORK_WORKER = textwrap.dedent(
    """
    import gc, importlib, json, os, sys, time
    for name in sys.argv[2:]:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()
    rss_kb = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss_kb = int(line.split()[1])
    samples = []
    for i in range(int(sys.argv[1]) + 1):
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        t1 = time.perf_counter()
        if status != 0:
            sys.exit(f"forked child exited with status {status}")
        if i > 0:
            samples.append((t1 - t0) * 1000)
    print(json.dumps({"samples_ms": samples, "rss_mb": rss_kb / 1024}))
    """
)


def warm_fork(n: int) -> tuple[list[float], float]:
    """Fork round trips (ms) of a warm grain-worker-like interpreter, and its RSS in MB.

    The worker is a fresh interpreter (not a multiprocessing child of this module), so its
    memory holds only the grain worker's imports, not docker/kafka clients of the benchmark.
    """
    proc = subprocess.run(
        [sys.executable, "-c", _FORK_WORKER, str(n), *WORKER_IMPORTS],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    if proc.returncode != 0:
        raise BenchError(f"fork python (warm worker): {proc.stderr.strip()[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return [float(x) for x in result["samples_ms"]], float(result["rss_mb"])


def sandbox_start(n: int, extras: dict[str, float] | None = None) -> dict[str, list[float]]:
    """Start latencies (ms), n per series (see the module docstring).

    ``extras``, if given, receives ``"fork python (warm worker) parent RSS MB"``.
    """
    c = load_config()
    results: dict[str, list[float]] = {}
    client = _docker(c)
    try:
        results["docker run"] = _docker_run(client, c.base_image, n, None)
        results["docker run (network none)"] = _docker_run(client, c.base_image, n, "none")
        holder = client.containers.create(
            c.base_image,
            ["python3", "-c", "import time; time.sleep(1e9)"],
            labels=BENCH_LABELS,
            network_mode="none",
        )
        try:
            holder.start()
            results["docker exec true"] = _docker_exec(client, holder.id, ["true"], n)
            results["docker exec python3"] = _docker_exec(
                client, holder.id, ["python3", "-c", "pass"], n
            )
        finally:
            _remove(client, holder.id)
    except docker.errors.DockerException as e:
        raise BenchError(f"docker at {c.docker_url}: {e}") from e
    finally:
        # belt and braces: nothing labelled by this benchmark survives it
        for leftover in client.containers.list(all=True, filters={"label": "dev.sand.bench=1"}):
            _remove(client, leftover.id)
        client.close()
    results["exec python"] = _exec_python(n)
    fork_samples, rss_mb = warm_fork(n)
    results["fork python (warm worker)"] = fork_samples
    if extras is not None:
        extras["fork python (warm worker) parent RSS MB"] = rss_mb
    return results


# --------------------------------------------------------------------------------------------
# versions and report
# --------------------------------------------------------------------------------------------


def _version_of(what: str, get: Callable[[], str]) -> str:
    try:
        return get()
    except Exception as e:
        return f"unavailable ({what}: {type(e).__name__}: {e})"


def versions() -> dict[str, str]:
    """Versions of what is measured: docker engine, redis-server, kafka broker, python, java."""
    c = load_config()

    def docker_version() -> str:
        client = docker.DockerClient(base_url=c.docker_url, timeout=30)
        try:
            return str(client.version()["Version"])
        finally:
            client.close()

    def redis_version() -> str:
        r = redis.Redis(unix_socket_path=str(c.redis_socket), password=c.redis_password or None)
        try:
            info: Any = r.info("server")
            return str(info["redis_version"])
        finally:
            r.close()

    def kafka_version() -> str:
        # the broker API does not report its release; the cluster runs the jars it installed
        jars = glob.glob(str(c.home / "deploy" / "lib" / "kafka" / "kafka_*-*.jar"))
        if not jars:
            raise BenchError("no deploy/lib/kafka/kafka_*.jar")
        name = Path(sorted(jars)[0]).stem  # kafka_2.13-4.1.0
        return f"{name.rsplit('-', 1)[1]} (Scala {name.split('_')[1].split('-')[0]}, installed jar)"

    def java_version() -> str:
        proc = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        return proc.stderr.strip().splitlines()[0]

    return {
        "docker engine": _version_of("docker", docker_version),
        "redis-server": _version_of("redis", redis_version),
        "kafka broker": _version_of("kafka", kafka_version),
        "python": sys.version.split()[0],
        "java": _version_of("java", java_version),
    }


def percentile(samples: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def _report(title: str, results: dict[str, list[float]]) -> None:
    print(f"\n{title}")
    print(f"  {'series':<30} {'n':>5} {'p50 ms':>10} {'p99 ms':>10} {'mean ms':>10}")
    for series, samples in results.items():
        print(
            f"  {series:<30} {len(samples):>5} {percentile(samples, 50):>10.3f}"
            f" {percentile(samples, 99):>10.3f} {statistics.fmean(samples):>10.3f}"
        )


def main() -> int:
    for name, version in versions().items():
        print(f"{name:>14}: {version}")
    try:
        t0 = time.perf_counter()
        extras: dict[str, float] = {}
        starts = sandbox_start(10, extras)
        t1 = time.perf_counter()
        _report(f"Sandbox start (Fig. 5a), {t1 - t0:.1f} s", starts)
        for name, value in extras.items():
            print(f"  {name}: {value:.1f}")
        t2 = time.perf_counter()
        latencies = bus_latency(200, 0.005)
        t3 = time.perf_counter()
        _report(f"Bus latency, one way (Fig. 5b), gap 5 ms, {t3 - t2:.1f} s", latencies)
    except BenchError as e:
        print(f"bench/micro.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
