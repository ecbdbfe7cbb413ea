"""Measures the invocation path on a running cluster and prints the figures.

    .venv/bin/python bench/invocation.py [--backend docker|process] [-n 400]

Figures (medians and p99, with a baseline measured in the same run, because this
machine is shared and noisy):

- hop: end of grain `first` to start of grain `second` on the local bus, against a
  plain Redis LPUSH→BRPOP hop between two Python processes (no fork, no engine);
- overhead: a one-grain synchronous invocation through nginx, total minus the grain's
  own time, entering through the local bus (the default) and through the entry grain's
  Kafka topic, against GET /health through the same nginx and frontend;
- deploy: time to a deployed app with ready grain workers;
- memory: unique memory (USS) of the app's sandbox processes with 0 and N calls in
  flight, and the increment per call.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import redis
import requests
from sand.client import SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import load_config

APP_DIR = Path(__file__).resolve().parent / "apps" / "hop"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def line(name: str, values: list[float], unit: str = "ms") -> str:
    return (
        f"{name:<34} p50 {pct(values, 0.5):8.3f} {unit}   p99 {pct(values, 0.99):8.3f} {unit}"
        f"   mean {statistics.fmean(values):8.3f} {unit}   n {len(values)}"
    )


def _consumer(socket: str, password: str, queue: str, out: multiprocessing.Queue) -> None:
    client = redis.Redis(unix_socket_path=socket, password=password)
    while True:
        item = client.brpop([queue], timeout=5)
        if item is None:
            return
        sent = float(item[1])
        if sent < 0:
            return
        out.put((time.time() - sent) * 1000)


def redis_baseline(n: int, gap_s: float) -> list[float]:
    config = load_config()
    queue = "sand:bench:baseline"
    results: multiprocessing.Queue = multiprocessing.Queue()
    worker = multiprocessing.Process(
        target=_consumer,
        args=(str(config.redis_socket), config.redis_password, queue, results),
    )
    worker.start()
    client = redis.Redis(unix_socket_path=str(config.redis_socket), password=config.redis_password)
    time.sleep(0.2)
    for _ in range(n):
        client.lpush(queue, repr(time.time()))
        time.sleep(gap_s)
    client.lpush(queue, "-1")
    worker.join(10)
    return [results.get(timeout=5) for _ in range(n)]


def sandbox_uss_mb(app: str) -> float:
    total = 0
    for process in psutil.process_iter():
        try:
            if process.environ().get("SAND_APP") == app:
                total += process.memory_full_info().uss
        except psutil.Error:
            continue
    return total / (1024 * 1024)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="docker", choices=["docker", "process"])
    parser.add_argument("-n", type=int, default=400, help="invocations per series")
    parser.add_argument("--gap-ms", type=float, default=5.0, help="pause between calls")
    args = parser.parse_args()
    config = load_config()
    gateway = config.gateway_url
    token = admin_token(config)  # this machine's cluster: its operator is its admin
    client = SandClient(gateway, token=token)
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    gap = args.gap_ms / 1000

    started = time.perf_counter()
    client.deploy(APP_DIR, backend=args.backend)
    deploy_s = time.perf_counter() - started
    try:
        for _ in range(50):  # warm-up: JIT of the frontends, connections, pools
            session.post(f"{gateway}/v1/apps/hop/invoke?workflow=one", json={}).raise_for_status()

        hops: list[float] = []
        for _ in range(args.n):
            response = session.post(f"{gateway}/v1/apps/hop/invoke?workflow=main", json={})
            hops.append(response.json()["output"]["hop_ms"])
            time.sleep(gap)
        baseline = redis_baseline(args.n, gap)

        overhead: list[float] = []
        totals: list[float] = []
        for _ in range(args.n):
            t0 = time.perf_counter()
            response = session.post(f"{gateway}/v1/apps/hop/invoke?workflow=one", json={})
            total = (time.perf_counter() - t0) * 1000
            grain = response.json()["output"]["grain_ms"]
            totals.append(total)
            overhead.append(total - grain)
            time.sleep(gap)
        via_kafka: list[float] = []
        for _ in range(args.n):
            t0 = time.perf_counter()
            response = session.post(f"{gateway}/v1/apps/hop/invoke?workflow=one&via=kafka", json={})
            total = (time.perf_counter() - t0) * 1000
            via_kafka.append(total - response.json()["output"]["grain_ms"])
            time.sleep(gap)
        health: list[float] = []
        for _ in range(args.n):
            t0 = time.perf_counter()
            session.get(f"{gateway}/health").raise_for_status()
            health.append((time.perf_counter() - t0) * 1000)
            time.sleep(gap)

        memory: list[str] = []
        idle = statistics.median(sandbox_uss_mb("hop") for _ in range(3))
        for calls in (10, 25, 50):
            with ThreadPoolExecutor(max_workers=calls) as pool:
                ids = list(
                    pool.map(
                        lambda _: client.invoke(
                            "hop", {"seconds": 4}, workflow="hold", wait=False
                        ).execution_id,
                        range(calls),
                    )
                )
            time.sleep(2.0)
            busy = sandbox_uss_mb("hop")
            memory.append(
                f"memory, {calls:2d} calls in flight          sandbox USS {busy:7.1f} MB"
                f"   idle {idle:6.1f} MB   per call {(busy - idle) / calls:6.2f} MB"
            )
            for execution_id in ids:
                while client.result(execution_id).status == "RUNNING":
                    time.sleep(0.2)
    finally:
        client.undeploy("hop")

    print(f"backend {args.backend}; {args.n} calls per series, {args.gap_ms} ms apart")
    print(line("hop, grain to grain (local bus)", hops))
    print(line("baseline: redis hop, no fork", baseline))
    print(f"{'hop / baseline (p50)':<34} {pct(hops, 0.5) / pct(baseline, 0.5):8.2f}x")
    print(line("one-grain sync call, total", totals))
    print(line("one-grain sync call, overhead", overhead))
    print(line("same, entering through Kafka", via_kafka))
    print(
        f"{'kafka entry / local entry (p50)':<34} {pct(via_kafka, 0.5) / pct(overhead, 0.5):8.2f}x"
    )
    print(line("baseline: GET /health via nginx", health))
    print(f"{'deploy (sandbox ready)':<34} {deploy_s:8.2f} s")
    for row in memory:
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
