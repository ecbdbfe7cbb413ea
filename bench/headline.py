"""The headline figures of a benchmark run, their targets (issue 25), and the score kept.

:func:`figures` reduces one run's results to a flat dict of named numbers;
``docs/benchmarks/headline.json`` holds the last committed run's, so every report
(and the quick profile) shows each figure against the previous run: a regression
is visible in review. Targets are ratios against baselines and peers measured in
the same run wherever the target is one, because this machine is noisy.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.loadgen import percentile

HEADLINE_JSON = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "headline.json"
# the result name of the cross-host hop on the replicated stack (bench/replicated_hop.py)
REPLICATED_HOP = "hop across hosts (replicated)"


def _p(values: list[float], q: float) -> float:
    return percentile(values, q)


def figures(r: dict[str, Any]) -> dict[str, float]:
    """The headline numbers of results ``r`` (a run of ``python -m bench``); absent
    series are left out. Figures of the reuse-mode series carry ``_reuse`` in their key."""
    out: dict[str, float] = {}
    modes = (
        ("", ""),
        (" (reuse)", "_reuse"),
        (" without backups", "_nobackup"),
        (" with backups (again)", "_again"),
        (" without history", "_nohistory"),
    )
    for mode, suffix in modes:
        cpu = r.get(f"cpu per invocation{mode}") or {}
        if cpu:
            out[f"cpu{suffix}_ms_per_call"] = sum(v for k, v in cpu.items() if k != "wall")
        hop = r.get(f"hop{mode}") or []
        if hop:
            out[f"hop{suffix}_p50_ms"] = _p(hop, 0.5)
            out[f"hop{suffix}_p99_ms"] = _p(hop, 0.99)
        one = (r.get(f"overhead by clients{mode}") or {}).get(1) or []
        if one:
            out[f"overhead{suffix}_p50_ms"] = _p(one, 0.5)
            out[f"overhead{suffix}_p99_ms"] = _p(one, 0.99)
        points = r.get(f"throughput{mode}") or []
        if points:
            within = [pt.achieved for pt in points if pt.p99 <= 20 and not pt.errors]
            out[f"throughput{suffix}_p99_20ms_per_s"] = max(within, default=0.0)
    for name, key in (("hop through kafka", "kafka"), (REPLICATED_HOP, "replicated")):
        hops = r.get(name) or []
        if hops:
            out[f"hop_{key}_p50_ms"] = _p(hops, 0.5)
            out[f"hop_{key}_p99_ms"] = _p(hops, 0.99)
    floor = (r.get("bus latency") or {}).get("python redis") or []
    if floor:
        out["redis_floor_p50_ms"] = _p(floor, 0.5)
        out["redis_floor_p99_ms"] = _p(floor, 0.99)
    for peer in ("celery", "ray"):
        if r.get(f"hop {peer}"):
            out[f"hop_{peer}_p50_ms"] = _p(r[f"hop {peer}"], 0.5)
    for system in ("sand", "sand (reuse)", "celery", "ray"):
        runs = r.get(f"pipeline {system}") or []
        if runs:
            key = system.replace(" (reuse)", "_reuse")
            out[f"pipeline_{key}_overhead_p50_ms"] = _p([t - c for t, c in runs], 0.5)
    idle = r.get("idle stack") or {}
    if "share_of_one_core_pct" in idle:
        out["idle_stack_pct_of_core"] = idle["share_of_one_core_pct"]
    slope = memory_slope(r.get("memory") or {})
    if slope is not None:
        out["memory_mb_per_call"] = slope
    return out


def memory_slope(memory: dict[int, tuple[float, float]]) -> float | None:
    """MB of sandbox USS per call in flight: the least-squares slope over the levels."""
    points = [(x, uss) for x, (uss, _) in memory.items()]
    if len(points) < 2:
        return None
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else None


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    text: str  # the target as the issue states it
    figure: str  # the figure shown (a key of figures())
    unit: str
    met: Callable[[dict[str, float]], bool | None]
    lower_is_better: bool = True


def _ratio_ok(f: dict[str, float], num: str, den: str, limit: float) -> bool | None:
    if num not in f or den not in f or not f[den]:
        return None
    return f[num] <= limit * f[den]


def _below_peers(f: dict[str, float], figure: str, peer_figure: str, limit: float) -> bool | None:
    """Whether ``figure`` is at most ``limit`` × each peer's (Celery's and Ray's) figure of
    the same run; None — not judged — unless both peers were measured in it."""
    checks = [_ratio_ok(f, figure, peer_figure.format(peer=p), limit) for p in ("celery", "ray")]
    if any(c is None for c in checks):
        return None
    return all(checks)


def _hop_met(f: dict[str, float]) -> bool | None:
    """Below Celery's and Ray's p50 of the same run (not judged without them), and the
    p99 within 4× the plain Redis hop's."""
    peers = _below_peers(f, "hop_p50_ms", "hop_{peer}_p50_ms", 1.0)
    tail = _ratio_ok(f, "hop_p99_ms", "redis_floor_p99_ms", 4.0)
    if peers is None:
        return None
    return peers and tail is not False


def _at_most(key: str, limit: float) -> Callable[[dict[str, float]], bool | None]:
    return lambda f: None if key not in f else f[key] <= limit


def _at_least(key: str, limit: float) -> Callable[[dict[str, float]], bool | None]:
    return lambda f: None if key not in f else f[key] >= limit


# The targets of issue 25 (fork per event is the default mode; reuse beside it).
TARGETS = (
    Target("CPU of the whole stack per one-grain call, fork", "≤ 8 ms", "cpu_ms_per_call", "ms",
           _at_most("cpu_ms_per_call", 8)),
    Target("CPU of the whole stack per one-grain call, reuse", "≤ 3 ms",
           "cpu_reuse_ms_per_call", "ms", _at_most("cpu_reuse_ms_per_call", 3)),
    Target("local hop p50, fork", "below Celery's and Ray's (same run); p99 ≤ 4× plain Redis",
           "hop_p50_ms", "ms", _hop_met),
    Target("local hop p99, fork", "≤ 4× the plain Redis hop's p99", "hop_p99_ms", "ms",
           lambda f: _ratio_ok(f, "hop_p99_ms", "redis_floor_p99_ms", 4.0)),
    Target("local hop p50, reuse", "≤ 2× the plain Redis hop's p50", "hop_reuse_p50_ms", "ms",
           lambda f: _ratio_ok(f, "hop_reuse_p50_ms", "redis_floor_p50_ms", 2.0)),
    Target("one-grain overhead through nginx p50, fork", "≤ 4 ms", "overhead_p50_ms", "ms",
           _at_most("overhead_p50_ms", 4)),
    Target("one-grain overhead through nginx p99, fork", "≤ 12 ms", "overhead_p99_ms", "ms",
           _at_most("overhead_p99_ms", 12)),
    Target("one-grain overhead through nginx p50, reuse", "≤ 2 ms", "overhead_reuse_p50_ms",
           "ms", _at_most("overhead_reuse_p50_ms", 2)),
    Target("one-grain overhead through nginx p99, reuse", "≤ 6 ms", "overhead_reuse_p99_ms",
           "ms", _at_most("overhead_reuse_p99_ms", 6)),
    Target("4-grain pipeline overhead p50, fork", "below Celery's and Ray's (same run)",
           "pipeline_sand_overhead_p50_ms", "ms",
           lambda f: _below_peers(f, "pipeline_sand_overhead_p50_ms",
                                  "pipeline_{peer}_overhead_p50_ms", 1.0)),
    Target("4-grain pipeline overhead p50, reuse", "≤ half of Celery's and of Ray's",
           "pipeline_sand_reuse_overhead_p50_ms", "ms",
           lambda f: _below_peers(f, "pipeline_sand_reuse_overhead_p50_ms",
                                  "pipeline_{peer}_overhead_p50_ms", 0.5)),
    Target("empty one-grain calls/s with p99 ≤ 20 ms, fork", "≥ 150/s",
           "throughput_p99_20ms_per_s", "/s", _at_least("throughput_p99_20ms_per_s", 150),
           lower_is_better=False),
    Target("empty one-grain calls/s with p99 ≤ 20 ms, reuse", "≥ 400/s",
           "throughput_reuse_p99_20ms_per_s", "/s",
           _at_least("throughput_reuse_p99_20ms_per_s", 400), lower_is_better=False),
    Target("memory per concurrent in-flight call", "≤ 2 MB USS", "memory_mb_per_call", "MB",
           _at_most("memory_mb_per_call", 2)),
    Target("idle stack, `hello` deployed, 60 s", "≤ 2 % of one core", "idle_stack_pct_of_core",
           "%", _at_most("idle_stack_pct_of_core", 2)),
)  # fmt: skip


def previous(path: Path = HEADLINE_JSON) -> dict[str, float]:
    """The figures of the last committed run, or {} when there is none or it is unreadable."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    figs = doc.get("figures") if isinstance(doc, dict) else None
    return {k: float(v) for k, v in (figs or {}).items() if isinstance(v, int | float)}


def table(now: dict[str, float], before: dict[str, float]) -> list[str]:
    """Markdown rows: each target with this run's figure, the previous run's, the change."""
    rows = [
        "| figure | target | this run | previous run | change | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for t in TARGETS:
        if t.figure not in now:
            rows.append(f"| {t.name} | {t.text} | not measured | – | – | – |")
            continue
        value = now[t.figure]
        old = before.get(t.figure)
        if old:
            change = value / old
            worse = change > 1.1 if t.lower_is_better else change < 0.9
            delta = f"{change:.2f}×" + (" **worse**" if worse else "")
            prev = f"{old:.2f} {t.unit}"
        else:
            delta, prev = "–", "–"
        met = t.met(now)
        verdict = "–" if met is None else ("met" if met else "**missed**")
        rows.append(
            f"| {t.name} | {t.text} | {value:.2f} {t.unit} | {prev} | {delta} | {verdict} |"
        )
    return rows


def save(now: dict[str, float], profile: str, path: Path = HEADLINE_JSON) -> None:
    """Write this run's figures as the score the next run is compared with."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"profile": profile, "figures": {k: round(v, 4) for k, v in sorted(now.items())}}
    path.write_text(json.dumps(doc, indent=1) + "\n")
