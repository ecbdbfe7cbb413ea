"""Renders docs/benchmarks.md (and its plots) from one run's results."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from bench import headline, report, stack_cpu
from bench.headline import REPLICATED_HOP
from bench.loadgen import percentile

p50 = lambda v: percentile(v, 0.5)  # noqa: E731
p99 = lambda v: percentile(v, 0.99)  # noqa: E731


def _overheads(runs: list[tuple[float, float]]) -> list[float]:
    return [total - compute for total, compute in runs]


def render(
    results: dict[str, Any],
    failures: list[str],
    profile: Any,
    full: bool,
    elapsed_s: float,
    machine: dict[str, str],
    plots: Path,
) -> str:
    r = results
    out: list[str] = []
    add = out.append
    add("# Benchmarks\n")
    add(
        f"Written by `make bench{' FULL=1' if full else ''}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
        f" in {elapsed_s / 60:.1f} min ({'full' if full else 'quick'} profile). Every figure is"
        " measured through the real stack on this machine, in one run; comparisons are against"
        " baselines and peers measured in the same run, because the machine is shared and noisy."
        " Latencies are in milliseconds: p50 (median), p99, mean, n.\n"
    )
    add("## Machine and versions\n")
    add("| | |\n|---|---|")
    for key, value in {**machine, **{f"{k}": v for k, v in r.get("versions", {}).items()}}.items():
        add(f"| {key} | {value} |")
    for name in ("celery", "rq", "ray", "temporal"):
        if f"version {name}" in r:
            add(f"| {name} | {r[f'version {name}']} |")
    add("")

    # -- headline ---------------------------------------------------------------------
    add("## Headline: targets of issue 25, against the previous committed run\n")
    add(
        "Each figure of this run beside the same figure of the run committed before it"
        " (`docs/benchmarks/headline.json`); a change above 10 % for the worse is marked."
        " Ratio targets compare with baselines and peers measured in this same run.\n"
    )
    out.extend(headline.table(headline.figures(r), headline.previous()))
    add("")
    hop = r.get("hop") or []
    bus = r.get("bus latency") or {}
    by_clients = r.get("overhead by clients") or {}
    memory = r.get("memory") or {}
    slope = headline.memory_slope(memory)
    sand_pipe = r.get("pipeline sand") or []
    points = r.get("throughput") or []
    if failures:
        add("### Series that failed in this run\n")
        for failure in failures:
            add(f"- {failure}")
        add("")

    # -- 1. sandbox start -------------------------------------------------------------------
    starts = r.get("sandbox start") or {}
    add("## 1. Sandbox start (the paper's Fig. 5a)\n")
    if starts:
        add(report.TABLE_HEAD)
        for name, values in starts.items():
            add(report.stats_row(name, values))
        report.bar_plot(plots / "sandbox-start.png", "Sandbox start", starts, log=True)
        add("\n![sandbox start](benchmarks/sandbox-start.png)\n")
    else:
        add("Not measured in this run.\n")

    # -- 2. bus latency -------------------------------------------------------------------
    add("## 2. Local bus vs Kafka message latency (Fig. 5b)\n")
    if bus:
        add(report.TABLE_HEAD)
        for name, values in bus.items():
            add(report.stats_row(name, values))
        report.bar_plot(plots / "bus-latency.png", "One-way message latency", bus, log=True)
        add("\n![bus latency](benchmarks/bus-latency.png)\n")
    else:
        add("Not measured in this run.\n")

    # -- 3. grain hop ------------------------------------------------------------------
    add("## 3. Grain interaction latency (Fig. 5c)\n")
    add("End of grain 1 → start of grain 2, one execution at a time. SAND: two grains of one"
        " app on the local bus; SAND through Kafka: the same app deployed with `second` as a"
        " remote grain, so the event takes the cross-host path (instance → host agent → Kafka"
        " → host agent → queue) on this one host, without a network between; SAND replicated:"
        " `first` on host-1 and `second` on host-2 of a replicated three-host stack started"
        " for this series (three brokers, acks=all; bench/replicated_hop.py); peers: task A →"
        " task B in each (see bench/peers); Temporal (activity A → activity B of one workflow)"
        " in the FULL profile only.\n")  # fmt: skip
    hops = {
        "SAND (local bus)": hop,
        "SAND (through Kafka)": r.get("hop through kafka") or [],
        "SAND (replicated, host-1 → host-2)": r.get(REPLICATED_HOP) or [],
    }
    for name in ("celery", "rq", "ray", "temporal"):
        if r.get(f"hop {name}"):
            hops[name] = r[f"hop {name}"]
    hops = {k: v for k, v in hops.items() if v}
    if hops:
        add(report.TABLE_HEAD)
        for name, values in hops.items():
            add(report.stats_row(name, values))
        report.bar_plot(plots / "hop.png", "Grain interaction latency", hops, log=True)
        add("\n![hop](benchmarks/hop.png)\n")

    # -- 4. overhead and throughput ------------------------------------------------------------
    add("## 4. Overhead of a one-grain synchronous call through nginx, and throughput\n")
    add("Overhead = client-side latency − the grain's own time, closed loop with N clients.\n")
    if by_clients:
        add(report.TABLE_HEAD)
        for clients, values in by_clients.items():
            add(report.stats_row(f"{clients} client(s)", values))
        levels = list(by_clients)
        report.line_plot(plots / "overhead.png", "One-grain overhead vs concurrent clients",
                         "clients", "ms", {"p50": (levels, [p50(by_clients[c]) for c in levels]),
                                           "p99": (levels, [p99(by_clients[c]) for c in levels])})  # fmt: skip
        add("\n![overhead](benchmarks/overhead.png)\n")
    steps = r.get("breakdown") or {}
    if steps:
        add("Where the time of one traced call goes (`?trace=1`; medians of each step):\n")
        add(report.TABLE_HEAD)
        for name, values in steps.items():
            add(report.stats_row(name, values))
        add("")
    cpu = r.get("cpu per invocation") or {}
    if cpu:
        wall = cpu.get("wall", float("nan"))
        spent = sum(v for k, v in cpu.items() if k != "wall")
        add("CPU each part of the stack spends per one-grain invocation (one client; process CPU"
            " time before and after the series, divided by the calls), against the wall time per"
            " call, after 1,000 uncounted calls so that the JVMs' JIT compilation is over (the"
            " warm stack's steady state). Two cores give at most 2 ms of CPU per ms of wall"
            " time:\n")  # fmt: skip
        add("| process | CPU ms per invocation |\n|---|---|")
        for name, value in sorted(
            ((k, v) for k, v in cpu.items() if k != "wall"), key=lambda kv: -kv[1]
        ):
            add(f"| {name} | {value:.2f} |")
        add(f"| **all** | **{spent:.2f}** (wall per call {wall:.2f} ms) |\n")
        if steps:
            worst = sorted(((p50(v), k) for k, v in steps.items() if k != "total"), reverse=True)[
                :3
            ]
            add("The largest steps of the traced call at p50: "
                + "; ".join(f"{k} {v:.1f} ms" for v, k in worst)
                + f". Per call the stack spends {spent:.1f} ms of CPU in {wall:.1f} ms of wall"
                f" time (5 ms of it the client's pause): {spent / wall:.2f} of the 2 cores are"
                " busy with a single client, so under any load the steps wait for a core more"
                " than they compute.\n")  # fmt: skip
    idle = r.get("idle stack") or {}
    if idle:
        add(f"The stack at rest for {60} s with `hello` deployed (CPU ms per second; issue 25's"
            " target: at most 2 % of one core, 20 ms/s):\n")  # fmt: skip
        add("| process | CPU ms per s at rest |\n|---|---|")
        for name, value in idle.items():
            if name != "share_of_one_core_pct":
                add(f"| {name} | {value:.2f} |")
        add(f"| **whole stack** | **{idle.get('share_of_one_core_pct', float('nan')):.2f} %"
            " of one core** |\n")  # fmt: skip
    if points:
        add("Open loop, Poisson arrivals, each rate for a fixed time; the ramp stops once the"
            " stack completes less than 90 % of the offered rate twice (`lag` = how late the"
            " generator sent, to show when it saturates itself; `client cores` = the cores the"
            " generator itself kept busy, out of the machine's two):\n")  # fmt: skip
        add(
            "| offered /s | achieved /s | p50 | p99 | errors | max lag | client cores |\n|---|---|---|---|---|---|---|"
        )
        for pt in points:
            add(f"| {pt.rate:g} | {pt.achieved:.1f} | {pt.p50:.2f} ms | {pt.p99:.2f} ms | {pt.errors} | {pt.max_lag_ms:.1f} ms | {pt.client_cores:.2f} |")  # fmt: skip
        report.line_plot(plots / "throughput.png", "Latency vs offered load", "offered calls/s", "ms",
                         {"p50": ([p.rate for p in points], [p.p50 for p in points]),
                          "p99": ([p.rate for p in points], [p.p99 for p in points])}, hline=20)  # fmt: skip
        add("\n![throughput](benchmarks/throughput.png)\n")

    # -- 5. memory ---------------------------------------------------------------------------
    add("## 5. Memory per concurrent call\n")
    if memory:
        add("Sum over the app's sandbox processes (4 grain workers, their pre-forked children and"
            " the instances in flight) with N calls of a sleeping grain in flight.\n")  # fmt: skip
        add("| calls in flight | USS MB | PSS MB |\n|---|---|---|")
        for calls, (uss, pss) in memory.items():
            add(f"| {calls} | {uss:.1f} | {pss:.1f} |")
        add(f"\nBase (idle sandbox): {memory[0][0]:.1f} MB USS; increment per call (least-squares"
            f" slope): {slope:.2f} MB.\n")  # fmt: skip
        xs = list(memory)
        report.line_plot(plots / "memory.png", "Sandbox memory vs calls in flight", "calls in flight",
                         "MB", {"USS": (xs, [memory[x][0] for x in xs]),
                                "PSS": (xs, [memory[x][1] for x in xs])})  # fmt: skip
        add("![memory](benchmarks/memory.png)\n")

    # -- 6. pipeline -------------------------------------------------------------------------
    add("## 6. The 4-grain image pipeline\n")
    pipes = {"SAND": sand_pipe, "SAND (reuse mode)": r.get("pipeline sand (reuse)") or []}
    for name in ("celery", "rq", "ray", "temporal"):
        if r.get(f"pipeline {name}"):
            pipes[name] = r[f"pipeline {name}"]
    pipes = {k: v for k, v in pipes.items() if v}
    if pipes:
        add("Total = client-side latency; overhead = total − the four functions' own compute"
            " time. Same functions (examples/image-pipeline/grains) in every system.\n")  # fmt: skip
        add("| system | total p50 | total p99 | compute p50 | overhead p50 | overhead p99 | n |")
        add("|---|---|---|---|---|---|---|")
        for name, runs in pipes.items():
            totals = [t for t, _ in runs]
            overheads = _overheads(runs)
            add(f"| {name} | {p50(totals):.1f} ms | {p99(totals):.1f} ms | {p50([c for _, c in runs]):.1f} ms"
                f" | {p50(overheads):.1f} ms | {p99(overheads):.1f} ms | {len(runs)} |")  # fmt: skip
        report.bar_plot(plots / "pipeline.png", "Pipeline overhead (total − compute)",
                        {k: _overheads(v) for k, v in pipes.items()})  # fmt: skip
        add("\n![pipeline](benchmarks/pipeline.png)\n")

    # -- 7. bursty ---------------------------------------------------------------------------
    add("## 7. Bursty load\n")
    burst = r.get("bursty")
    if burst is not None:
        ok = [s.latency_ms for s in burst.samples if s.ok]
        add(f"{burst.schedule}; one-grain calls. {len(burst.samples)} calls,"
            f" {len(burst.samples) - len(ok)} errors.\n")  # fmt: skip
        add(report.TABLE_HEAD)
        add(report.stats_row("latency", ok))
        mem = [m for _, m in burst.memory]
        if mem:
            add(f"\nSandbox USS over the run: first sample {mem[0]:.1f} MB, min {min(mem):.1f} MB,"
                f" median {statistics.median(mem):.1f} MB, max {max(mem):.1f} MB, last sample"
                f" {mem[-1]:.1f} MB: instances give their memory back when they exit.\n")  # fmt: skip
        report.bursty_plot(plots / "bursty.png", burst.samples, burst.memory)
        add("![bursty](benchmarks/bursty.png)\n")

    # -- 8. backups ---------------------------------------------------------------------------
    add("## 8. Cost of the asynchronous Kafka backup on the local hop\n")
    on = (r.get("hop") or []) + (r.get("hop with backups (again)") or [])
    off = r.get("hop without backups") or []
    if on and off:
        add("The same hop app deployed with backups (every event copied to the host agent,"
            " which publishes it to Kafka and records results in Cassandra) and without, in the"
            " same run (with, without, with again).\n")  # fmt: skip
        add(report.TABLE_HEAD)
        add(report.stats_row("backups on", on))
        add(report.stats_row("backups off", off))
        add(f"\nBackups on / off at p50: {report.ratio(p50(on), p50(off))}. They are off the"
            " grain-to-grain path in the protocol but not in CPU: on 2 cores the host agent,"
            " Kafka and Cassandra compete with grain instances.\n")  # fmt: skip
        report.bar_plot(plots / "backups.png", "Local hop with and without backups",
                        {"backups on": on, "backups off": off})  # fmt: skip
        add("![backups](benchmarks/backups.png)\n")
    # -- 9. reuse mode ------------------------------------------------------------------------
    add("## 9. Reuse mode beside fork-per-event\n")
    reuse_hop = r.get("hop (reuse)") or []
    reuse_cpu = r.get("cpu per invocation (reuse)") or {}
    reuse_clients = r.get("overhead by clients (reuse)") or {}
    reuse_points = r.get("throughput (reuse)") or []
    if reuse_hop or reuse_cpu or reuse_clients:
        add("The same hop app deployed a second time as `hop-reuse`, every grain with"
            " `events_per_instance: 1000` (one process serves up to 1,000 events in sequence;"
            " decision 0010). Every backup, flag and execution record is kept as in"
            " fork-per-event.\n")  # fmt: skip
        add(report.TABLE_HEAD)
        for name, values in (("hop, fork per event", hop), ("hop, reuse", reuse_hop),
                             ("one-grain overhead (1 client), fork per event",
                              by_clients.get(1) or []),
                             *((f"one-grain overhead ({c} client(s)), reuse", v)
                               for c, v in reuse_clients.items())):  # fmt: skip
            if values:
                add(report.stats_row(name, values))
        add("")
    if reuse_cpu:
        fork_cpu = r.get("cpu per invocation") or {}
        add("Each part against its budget per call (DESIGN.md's budgets: the whole stack ≤ 5 ms"
            " fork per event, ≤ 3 ms reuse; only the processes of the measured stack are"
            " counted, `bench/stack_cpu.py`):\n")  # fmt: skip
        add("| process | fork ms | budget | verdict | reuse ms | budget | verdict |")
        add("|---|---|---|---|---|---|---|")
        for row in stack_cpu.budget_rows(fork_cpu, reuse_cpu):
            add("| " + " | ".join(row) + " |")
        add(f"| wall time per call | {fork_cpu.get('wall', float('nan')):.2f} | | |"
            f" {reuse_cpu.get('wall', float('nan')):.2f} | | |\n")  # fmt: skip
    if reuse_points:
        add("Throughput in reuse mode (open loop, as in section 4):\n")
        add(
            "| offered /s | achieved /s | p50 | p99 | errors | max lag | client cores |\n|---|---|---|---|---|---|---|"
        )
        for pt in reuse_points:
            add(f"| {pt.rate:g} | {pt.achieved:.1f} | {pt.p50:.2f} ms | {pt.p99:.2f} ms | {pt.errors} | {pt.max_lag_ms:.1f} ms | {pt.client_cores:.2f} |")  # fmt: skip
        add("")
    if not (reuse_hop or reuse_cpu or reuse_clients or reuse_points):
        add("Not measured in this run.\n")
    return "\n".join(out) + "\n"
