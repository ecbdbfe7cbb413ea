"""The headline figures of a benchmark run, their targets (issue 9), and the score kept.

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
    kafka = r.get("hop through kafka") or []
    if kafka:
        out["hop_kafka_p50_ms"] = _p(kafka, 0.5)
        out["hop_kafka_p99_ms"] = _p(kafka, 0.99)
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


def _hop_met(f: dict[str, float]) -> bool | None:
    checks = [
        _ratio_ok(f, "hop_p50_ms", "redis_floor_p50_ms", 1.5),
        _ratio_ok(f, "hop_p99_ms", "redis_floor_p99_ms", 3.0),
        *(_ratio_ok(f, "hop_p50_ms", f"hop_{p}_p50_ms", 1.0) for p in ("celery", "ray")),
    ]
    known = [c for c in checks if c is not None]
    return all(known) if known else None


def _pipeline_met(f: dict[str, float]) -> bool | None:
    checks = [
        _ratio_ok(f, "pipeline_sand_overhead_p50_ms", f"pipeline_{p}_overhead_p50_ms", 0.5)
        for p in ("celery", "ray")
    ]
    known = [c for c in checks if c is not None]
    return all(known) if known else None


def _at_most(key: str, limit: float) -> Callable[[dict[str, float]], bool | None]:
    return lambda f: None if key not in f else f[key] <= limit


TARGETS = (
    Target("CPU of the whole stack per one-grain call", "≤ 5 ms", "cpu_ms_per_call", "ms",
           _at_most("cpu_ms_per_call", 5)),
    Target("local hop p50", "≤ 1.5× a plain Redis hop (same run) and below Celery's and Ray's",
           "hop_p50_ms", "ms", _hop_met),
    Target("local hop p99", "≤ 3× the plain Redis hop's p99", "hop_p99_ms", "ms",
           lambda f: _ratio_ok(f, "hop_p99_ms", "redis_floor_p99_ms", 3.0)),
    Target("one-grain overhead through nginx p50", "≤ 2 ms", "overhead_p50_ms", "ms",
           _at_most("overhead_p50_ms", 2)),
    Target("one-grain overhead through nginx p99", "≤ 6 ms", "overhead_p99_ms", "ms",
           _at_most("overhead_p99_ms", 6)),
    Target("4-grain pipeline overhead p50", "≤ half of Celery's and of Ray's",
           "pipeline_sand_overhead_p50_ms", "ms", _pipeline_met),
    Target("empty one-grain calls/s with p99 ≤ 20 ms", "≥ 400/s (fork per event)",
           "throughput_p99_20ms_per_s", "/s",
           lambda f: None if "throughput_p99_20ms_per_s" not in f
           else f["throughput_p99_20ms_per_s"] >= 400, lower_is_better=False),
    Target("memory per concurrent in-flight call", "≤ 1.5 MB USS", "memory_mb_per_call", "MB",
           _at_most("memory_mb_per_call", 1.5)),
    Target("empty one-grain calls/s with p99 ≤ 20 ms, reuse mode", "≥ 1,000/s",
           "throughput_reuse_p99_20ms_per_s", "/s",
           lambda f: None if "throughput_reuse_p99_20ms_per_s" not in f
           else f["throughput_reuse_p99_20ms_per_s"] >= 1000, lower_is_better=False),
    # The reuse mode beside fork-per-event: the targets above are for fork-per-event.
    Target("reuse mode: CPU per one-grain call", "(side by side)", "cpu_reuse_ms_per_call",
           "ms", lambda f: None),
    Target("reuse mode: local hop p50", "(side by side)", "hop_reuse_p50_ms", "ms",
           lambda f: None),
    Target("reuse mode: local hop p99", "(side by side)", "hop_reuse_p99_ms", "ms",
           lambda f: None),
    Target("reuse mode: one-grain overhead p50", "(side by side)", "overhead_reuse_p50_ms",
           "ms", lambda f: None),
    Target("reuse mode: one-grain overhead p99", "(side by side)", "overhead_reuse_p99_ms",
           "ms", lambda f: None),
    Target("reuse mode: 4-grain pipeline overhead p50", "(side by side)",
           "pipeline_sand_reuse_overhead_p50_ms", "ms", lambda f: None),
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
