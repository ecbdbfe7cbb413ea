"""Writes docs/benchmarks.md and its PNG plots from the results of one run."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bench.loadgen import percentile


def stats_row(name: str, values: Sequence[float], unit: str = "ms") -> str:
    if not values:
        return f"| {name} | – | – | – | 0 |"
    mean = sum(values) / len(values)
    return (
        f"| {name} | {percentile(values, 0.5):.3f} {unit} | {percentile(values, 0.99):.3f} {unit}"
        f" | {mean:.3f} {unit} | {len(values)} |"
    )


TABLE_HEAD = "| series | p50 | p99 | mean | n |\n|---|---|---|---|---|"


def bar_plot(path: Path, title: str, series: dict[str, Sequence[float]], log: bool = False) -> None:
    names = list(series)
    p50 = [percentile(series[n], 0.5) for n in names]
    p99 = [percentile(series[n], 0.99) for n in names]
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.45 * len(names)))
    y = range(len(names))
    ax.barh([i + 0.2 for i in y], p50, height=0.4, label="p50")
    ax.barh([i - 0.2 for i in y], p99, height=0.4, label="p99")
    ax.set_yticks(list(y), names)
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds" + (" (log scale)" if log else ""))
    if log:
        ax.set_xscale("log")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def line_plot(
    path: Path,
    title: str,
    xlabel: str,
    ylabel: str,
    lines: dict[str, tuple[Sequence[float], Sequence[float]]],
    hline: float | None = None,
) -> None:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label, (xs, ys) in lines.items():
        ax.plot(xs, ys, marker="o", label=label)
    if hline is not None:
        ax.axhline(hline, linestyle="--", color="grey", label=f"goal {hline:g}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def bursty_plot(path: Path, samples: Sequence[Any], memory: Sequence[tuple[float, float]]) -> None:
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.scatter(
        [s.sent_s for s in samples], [s.latency_ms for s in samples], s=4, label="latency (ms)"
    )
    ax.set_xlabel("seconds")
    ax.set_ylabel("latency, ms (log)")
    ax.set_yscale("log")
    other = ax.twinx()
    other.plot([m[0] for m in memory], [m[1] for m in memory], color="tab:red", label="sandbox USS")
    other.set_ylabel("sandbox USS, MB")
    ax.set_title("Bursty load: latency of each call and the sandbox's memory over time")
    fig.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def ratio(a: float, b: float) -> str:
    if not b or math.isnan(a) or math.isnan(b):
        return "–"
    return f"{a / b:.2f}×"
