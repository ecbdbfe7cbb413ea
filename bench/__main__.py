"""`python -m bench [--full]` (what `make bench` runs): the whole benchmark suite on the
running cluster, and docs/benchmarks.md with its plots.

Quick profile by default (under 15 minutes on 2 cores); `--full` runs longer series.
Every figure is a median and p99 over its series, with the baseline or peer it is
compared against measured in the same run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from sand.client import SandApiError
from sand.cluster.bootstrap import BootstrapError, admin_token
from sand.cluster.config import load_config

from bench import headline, replicated_hop, sand_series
from bench.loadgen import percentile
from bench.stack_cpu import StackCpu, budget_rows

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PLOTS = DOCS / "benchmarks"
console = Console(stderr=True, highlight=False)


@dataclass(frozen=True)
class Profile:
    hop_n: int
    gap_s: float
    per_level: int
    rates: list[float]
    rate_seconds: float
    memory_levels: list[int]
    pipeline_n: int
    bursty_seconds: float
    breakdown_n: int
    sandbox_n: int
    bus_n: int
    reuse_rates: list[float]  # the throughput ramp of the reuse mode


QUICK = Profile(300, 0.005, 200, [25, 50, 100, 150, 200, 300, 400], 5, [1, 5, 10, 20, 30, 40, 50],
                20, 30, 200, 10, 300, [50, 100, 200, 400, 600, 800, 1000])  # fmt: skip
SMOKE = Profile(20, 0.005, 16, [25, 50], 2, [1, 5], 3, 5, 10, 2, 20, [50])
FULL = Profile(1000, 0.005, 1000, [25, 50, 75, 100, 150, 200, 300, 400, 600, 800, 1000], 15,
               [1, 2, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50], 100, 120, 1000, 30, 1000,
               [50, 100, 200, 400, 600, 800, 1000, 1200, 1500])  # fmt: skip


def step(name: str, run: Callable[[], Any], results: dict[str, Any], failures: list[str]) -> Any:
    """Runs one measurement; a failure is reported in the document, not fatal to the rest."""
    console.print(f"[bold]{name}[/bold]")
    started = time.monotonic()
    try:
        value = run()
        results[name] = value
        return value
    except Exception as exc:  # a benchmark that breaks must not lose the others' figures
        failures.append(f"{name}: {type(exc).__name__}: {exc}")
        console.print(f"[red]  failed: {exc}[/red]")
        return None
    finally:
        console.print(f"[dim]  {time.monotonic() - started:.1f} s[/dim]")


def machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_kb = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_kb = int(line.split()[1])
    except OSError:
        pass
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    redis = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout
    return {
        "cpu": f"{os.cpu_count()} × {cpu}",
        "memory": f"{mem_kb / 2**20:.1f} GiB",
        "kernel": platform.release(),
        "python": platform.python_version(),
        "java": java.splitlines()[0] if java else "?",
        "redis": redis.split()[2] if redis else "?",
        "kafka": "4.1 (KRaft, 1 broker)",
        "cassandra": "5.0.5 (1 node)",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="longer series (FULL=1)")
    parser.add_argument("--smoke", action="store_true", help="tiny series, to check the harness")
    parser.add_argument(
        "--skip", default="", help="comma-separated steps to skip: micro,peers,replicated"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="only the hop (with its Redis floor), the one-grain overhead and the CPU table,"
        " compared with the committed headline; writes build/bench-quick.json, not the report",
    )
    parser.add_argument(
        "--idle",
        action="store_true",
        help="only the idle stack: CPU per part over 60 s at rest with hello deployed",
    )
    args = parser.parse_args()
    profile = FULL if args.full else SMOKE if args.smoke else QUICK
    skip = set(filter(None, args.skip.split(",")))
    config = load_config()
    try:
        token = admin_token(config)
    except BootstrapError as exc:
        console.print(f"[red]{exc}[/red]")
        return 2
    cluster = sand_series.Cluster(
        config.gateway_url,
        token,
        StackCpu(config.state_dir, [host.state_dir for host in config.host_plans]),
    )
    try:
        cluster.client.apps()
    except SandApiError as exc:
        console.print(f"[red]the cluster is not reachable ({exc}); run `sand up` first[/red]")
        return 2
    if args.quick:
        return quick(cluster, QUICK)
    if args.idle:
        at_rest: dict[str, Any] = {}
        broken: list[str] = []
        idle_stack(cluster, at_rest, broken)
        print_idle(at_rest.get("idle stack") or {})
        return 1 if broken else 0
    results: dict[str, Any] = {}
    failures: list[str] = []
    started = time.monotonic()
    image_input = json.loads((ROOT / "examples/image-pipeline/expected.json").read_text())["main"][
        "input"
    ]

    if "micro" not in skip:
        micro = importlib.import_module("bench.micro")
        step("sandbox start", lambda: micro.sandbox_start(profile.sandbox_n), results, failures)
        step(
            "bus latency",
            lambda: micro.bus_latency(profile.bus_n, profile.gap_s),
            results,
            failures,
        )
        step("versions", micro.versions, results, failures)

    step("stack warm-up", lambda: warm_stack(cluster), results, failures)
    with cluster.deployed(sand_series.HOP_APP) as app:
        sand_series.warm_up(cluster, app, "one")
        step(
            "hop",
            lambda: sand_series.hops(cluster, app, profile.hop_n, profile.gap_s),
            results,
            failures,
        )
        step(
            "breakdown",
            lambda: sand_series.breakdown(cluster, app, profile.breakdown_n, profile.gap_s),
            results,
            failures,
        )
        step(
            "cpu per invocation",
            lambda: sand_series.cpu_per_invocation(
                cluster, app, profile.breakdown_n, profile.gap_s
            ),
            results,
            failures,
        )
        step(
            "overhead by clients",
            lambda: sand_series.overhead_by_clients(
                cluster, app, [1, 2, 4, 8, 16], profile.per_level
            ),
            results,
            failures,
        )
        step(
            "throughput",
            lambda: sand_series.throughput(cluster, app, profile.rates, profile.rate_seconds),
            results,
            failures,
        )
        step(
            "memory",
            lambda: sand_series.memory_by_concurrency(cluster, app, profile.memory_levels),
            results,
            failures,
        )
        step(
            "bursty",
            lambda: sand_series.bursty(cluster, app, 10, profile.bursty_seconds, 5),
            results,
            failures,
        )
    with cluster.deployed_reuse(sand_series.HOP_APP) as app:
        sand_series.warm_up(cluster, app, "one", 200)
        step("hop (reuse)",
             lambda: sand_series.hops(cluster, app, profile.hop_n, profile.gap_s),
             results, failures)  # fmt: skip
        step("cpu per invocation (reuse)",
             lambda: sand_series.cpu_per_invocation(
                 cluster, app, profile.breakdown_n, profile.gap_s),
             results, failures)  # fmt: skip
        step("overhead by clients (reuse)",
             lambda: sand_series.overhead_by_clients(
                 cluster, app, [1, 4, 16], profile.per_level),
             results, failures)  # fmt: skip
        step("throughput (reuse)",
             lambda: sand_series.throughput(
                 cluster, app, profile.reuse_rates, profile.rate_seconds),
             results, failures)  # fmt: skip
    with cluster.deployed(sand_series.HOP_APP, backups=False) as app:
        sand_series.warm_up(cluster, app, "one")
        step(
            "hop without backups",
            lambda: sand_series.hops(cluster, app, profile.hop_n, profile.gap_s),
            results,
            failures,
        )
    with cluster.deployed(sand_series.HOP_APP) as app:
        sand_series.warm_up(cluster, app, "one", 20)
        step(
            "hop with backups (again)",
            lambda: sand_series.hops(cluster, app, profile.hop_n, profile.gap_s),
            results,
            failures,
        )
    with cluster.deployed(sand_series.HOP_APP, remote_grains=("second",)) as app:
        sand_series.warm_up(cluster, app, "main", 20)
        step(
            "hop through kafka",
            lambda: sand_series.hops(cluster, app, profile.hop_n, profile.gap_s),
            results,
            failures,
        )
    with cluster.deployed(sand_series.PIPELINE_APP) as app:

        def pipeline() -> list[tuple[float, float]]:
            sand_series.pipeline(cluster, app, image_input, 5)  # warm-up
            return sand_series.pipeline(cluster, app, image_input, profile.pipeline_n)

        step("pipeline sand", pipeline, results, failures)
    with cluster.deployed_reuse(sand_series.PIPELINE_APP) as app:

        def pipeline_reuse() -> list[tuple[float, float]]:
            sand_series.pipeline(cluster, app, image_input, 5)  # warm-up
            return sand_series.pipeline(cluster, app, image_input, profile.pipeline_n)

        step("pipeline sand (reuse)", pipeline_reuse, results, failures)

    if "peers" not in skip:
        # Temporal's dev server is built by `make bench FULL=1` only (a 4-minute Go build)
        peers = ("celery", "rq", "ray", "temporal") if args.full else ("celery", "rq", "ray")
        for name in peers:
            module = importlib.import_module(f"bench.peers.{name}_peer")
            step(f"hop {name}", lambda m=module: m.measure_hop(profile.hop_n, profile.gap_s),
                 results, failures)  # fmt: skip
            step(f"pipeline {name}",
                 lambda m=module: m.measure_pipeline(profile.pipeline_n, image_input),
                 results, failures)  # fmt: skip
            step(f"version {name}", module.version, results, failures)

    idle_stack(cluster, results, failures)
    if "replicated" not in skip:
        replicated_cross_host_hop(profile, results, failures)
    elapsed = time.monotonic() - started
    write(results, failures, profile, args.full, elapsed)
    console.print(f"wrote {DOCS / 'benchmarks.md'} in {elapsed / 60:.1f} min")
    return 0


# How long the stack is measured at rest (issue 25: 60 s, `hello` deployed).
IDLE_SECONDS = 60.0


def idle_stack(cluster: sand_series.Cluster, results: dict[str, Any], failures: list[str]) -> None:
    """The stack at rest, `hello` deployed: what every per-call figure carries too."""
    with cluster.deployed(ROOT / "examples" / "hello") as app:
        sand_series.warm_up(cluster, app, "main", 20)
        time.sleep(5)  # the calls' own after-work (records, history batches) is over
        step("idle stack", lambda: sand_series.idle_cpu(cluster, IDLE_SECONDS), results, failures)


def replicated_cross_host_hop(
    profile: Profile, results: dict[str, Any], failures: list[str]
) -> None:
    """The hop between grains on two hosts of a replicated stack (issue 26), on a stack of its
    own started for it (about a minute), after the idle series, which needs the machine
    otherwise at rest."""

    def dim(line: str) -> None:
        console.print(f"[dim]  {line}[/dim]")

    step(headline.REPLICATED_HOP,
         lambda: replicated_hop.cross_host_hops(profile.hop_n, profile.gap_s, report=dim),
         results, failures)  # fmt: skip


def print_idle(idle: dict[str, float]) -> None:
    print("idle stack, ms of CPU per s")
    for name, value in idle.items():
        print(f"{name:<32} {value:>8.2f}")


# Calls made once, before any series, on a stack that may have just started: the JVMs' JIT
# compilers keep compiling for thousands of calls (measured: a frontend's C2 thread spent
# more CPU than any of its request threads over a whole quick run), which inflated the
# first series' CPU table by half against the same series later in the run.
STACK_WARM_UP_CALLS = 3000


def warm_stack(cluster: sand_series.Cluster) -> None:
    with cluster.deployed(sand_series.HOP_APP) as app:
        sand_series.warm_up(cluster, app, "one", STACK_WARM_UP_CALLS)


def quick(cluster: sand_series.Cluster, profile: Profile) -> int:
    """The figures that move with the invocation path's cost, in a few minutes: the local
    hop and its floor (a plain Redis hop between two Python processes, same run), the
    one-grain overhead through nginx, and the CPU of each process per call; with backups
    to the global bus on and off; the hop through Kafka (a grain on another host); and the
    hop between two hosts of a replicated stack started for it."""
    from bench.bus_latency import redis_floor

    results: dict[str, Any] = {}
    failures: list[str] = []
    started = time.monotonic()
    step("redis floor", lambda: {"python redis": redis_floor(profile.hop_n, profile.gap_s)},
         results, failures)  # fmt: skip
    results["bus latency"] = results.pop("redis floor", {})
    step("stack warm-up", lambda: warm_stack(cluster), results, failures)
    # The same three series in both instance modes: fork per event, then reuse.
    for mode, deployment in (
        ("", cluster.deployed(sand_series.HOP_APP)),
        (" (reuse)", cluster.deployed_reuse(sand_series.HOP_APP)),
    ):
        with deployment as app:
            sand_series.warm_up(cluster, app, "one", 200)
            step(f"hop{mode}",
                 lambda: sand_series.hops(cluster, app, profile.hop_n, profile.gap_s),
                 results, failures)  # fmt: skip
            step(f"overhead by clients{mode}",
                 lambda: sand_series.overhead_by_clients(cluster, app, [1], profile.hop_n),
                 results, failures)  # fmt: skip
            step(f"cpu per invocation{mode}",
                 lambda: sand_series.cpu_per_invocation(
                     cluster, app, profile.hop_n, profile.gap_s),
                 results, failures)  # fmt: skip
    # What the global bus costs (backups on above, off here; same run) and the hop through
    # Kafka, the path of a grain on another host (decision 0011)
    with cluster.deployed(sand_series.HOP_APP, backups=False) as app:
        sand_series.warm_up(cluster, app, "one", 200)
        step("hop without backups",
             lambda: sand_series.hops(cluster, app, profile.hop_n, profile.gap_s),
             results, failures)  # fmt: skip
        step("overhead by clients without backups",
             lambda: sand_series.overhead_by_clients(cluster, app, [1], profile.hop_n),
             results, failures)  # fmt: skip
        step("cpu per invocation without backups",
             lambda: sand_series.cpu_per_invocation(cluster, app, profile.hop_n, profile.gap_s),
             results, failures)  # fmt: skip
    # What recording each execution's history costs (decision 0018): history off here, on in
    # the series just below (same run, same warmth)
    with cluster.deployed_without_history(sand_series.HOP_APP) as app:
        sand_series.warm_up(cluster, app, "one", 200)
        step("hop without history",
             lambda: sand_series.hops(cluster, app, profile.hop_n, profile.gap_s),
             results, failures)  # fmt: skip
        step("overhead by clients without history",
             lambda: sand_series.overhead_by_clients(cluster, app, [1], profile.hop_n),
             results, failures)  # fmt: skip
        step("cpu per invocation without history",
             lambda: sand_series.cpu_per_invocation(cluster, app, profile.hop_n, profile.gap_s),
             results, failures)  # fmt: skip
    # Backups on once more, now that the stack is as warm as it was for the series without:
    # the first series ran on JVMs that had just started, which favours "off" (decision 0014)
    with cluster.deployed(sand_series.HOP_APP) as app:
        sand_series.warm_up(cluster, app, "one", 200)
        step("hop with backups (again)",
             lambda: sand_series.hops(cluster, app, profile.hop_n, profile.gap_s),
             results, failures)  # fmt: skip
        step("overhead by clients with backups (again)",
             lambda: sand_series.overhead_by_clients(cluster, app, [1], profile.hop_n),
             results, failures)  # fmt: skip
        step("cpu per invocation with backups (again)",
             lambda: sand_series.cpu_per_invocation(cluster, app, profile.hop_n, profile.gap_s),
             results, failures)  # fmt: skip
    with cluster.deployed(sand_series.HOP_APP, remote_grains=("second",)) as app:
        sand_series.warm_up(cluster, app, "main", 20)
        step("hop through kafka",
             lambda: sand_series.hops(cluster, app, profile.hop_n, profile.gap_s),
             results, failures)  # fmt: skip
    idle_stack(cluster, results, failures)

    replicated_cross_host_hop(profile, results, failures)
    now = headline.figures(results)
    print("\n".join(headline.table(now, headline.previous())))
    idle = results.get("idle stack") or {}
    print_idle(idle)
    print(f"{'global bus (same run), ms':<32} {'p50':>8} {'p99':>8}")
    for label, key in (
        ("local hop, backups on", "hop"),
        ("local hop, backups off", "hop_nobackup"),
        ("local hop, backups on again", "hop_again"),
        ("one-grain overhead, backups on", "overhead"),
        ("one-grain overhead, backups off", "overhead_nobackup"),
        ("one-grain overhead, on again", "overhead_again"),
        ("hop through kafka", "hop_kafka"),
        ("hop across hosts, replicated", "hop_replicated"),
        ("local hop, history off", "hop_nohistory"),
        ("one-grain overhead, history off", "overhead_nohistory"),
    ):
        print(f"{label:<32} {now.get(key + '_p50_ms', float('nan')):>8.2f} "
              f"{now.get(key + '_p99_ms', float('nan')):>8.2f}")  # fmt: skip
    fork = results.get("cpu per invocation") or {}
    reuse = results.get("cpu per invocation (reuse)") or {}
    off = results.get("cpu per invocation without backups") or {}
    again = results.get("cpu per invocation with backups (again)") or {}
    unrecorded = results.get("cpu per invocation without history") or {}
    print(f"{'CPU ms per call':<30} {'fork':>7} {'budget':>7} {'verdict':<13}"
          f" {'reuse':>7} {'budget':>7} {'verdict':<13}")  # fmt: skip
    for part, *cells in budget_rows(fork, reuse):
        print(f"{part:<30} {cells[0]:>7} {cells[1]:>7} {cells[2]:<13}"
              f" {cells[3]:>7} {cells[4]:>7} {cells[5]:<13}")  # fmt: skip
    print(f"{'CPU ms per call':<32} {'fork per event':>15} {'reuse':>8} {'no backups':>11} "
          f"{'no history':>11} {'on again':>9}")  # fmt: skip
    for name in fork or reuse:
        label = "wall time" if name == "wall" else name
        print(f"{label:<32} {fork.get(name, float('nan')):>15.2f} "
              f"{reuse.get(name, float('nan')):>8.2f} "
              f"{off.get(name, float('nan')):>11.2f} "
              f"{unrecorded.get(name, float('nan')):>11.2f} "
              f"{again.get(name, float('nan')):>9.2f}")  # fmt: skip
    out = ROOT / "build" / "bench-quick.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    off = results.get("cpu per invocation without backups") or {}
    doc = {
        "figures": now,
        "cpu_ms_per_call": fork,
        "cpu_ms_per_call_reuse": reuse,
        "cpu_ms_per_call_without_backups": off,
        "cpu_ms_per_call_with_backups_again": again,
        "cpu_ms_per_call_without_history": unrecorded,
        "idle_cpu_ms_per_s": idle,
    }
    out.write_text(json.dumps(doc, indent=1) + "\n")
    console.print(f"wrote {out} in {(time.monotonic() - started) / 60:.1f} min; failed: {failures}")
    return 1 if failures else 0


def write(
    results: dict[str, Any], failures: list[str], profile: Profile, full: bool, elapsed: float
) -> None:
    from bench import document

    PLOTS.mkdir(parents=True, exist_ok=True)
    text = document.render(results, failures, profile, full, elapsed, machine(), PLOTS)
    (DOCS / "benchmarks.md").write_text(text)
    summary = {k: _summarise(v) for k, v in results.items()}
    (PLOTS / "results.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    headline.save(headline.figures(results), "full" if full else "quick")


def _summarise(value: Any) -> Any:
    if isinstance(value, list) and value and isinstance(value[0], float | int):
        return {
            "p50": percentile(value, 0.5),
            "p99": percentile(value, 0.99),
            "mean": statistics.fmean(value),
            "n": len(value),
        }
    if isinstance(value, dict):
        return {str(k): _summarise(v) for k, v in value.items()}
    return value if isinstance(value, str | int | float) else str(type(value).__name__)


if __name__ == "__main__":
    sys.exit(main())
