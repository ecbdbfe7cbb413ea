"""Measure every peer and print p50/p99 per series: `.venv/bin/python -m bench.peers`.

A check of the peer modules, with the sizes the harness uses by default; the harness
itself calls the same functions and plots the figures.
"""

from __future__ import annotations

import argparse
import importlib
import time
from types import ModuleType

from bench.peers import common

PEERS = ("celery_peer", "rq_peer", "ray_peer")


def _row(label: str, values: list[float]) -> str:
    p50, p99 = common.pct(values, 0.5), common.pct(values, 0.99)
    return f"  {label:<22} p50 {p50:8.2f} ms   p99 {p99:8.2f} ms"


def _measure(peer: ModuleType, hops: int, runs: int, gap_s: float) -> None:
    print(f"{peer.NAME}: {peer.version()}", flush=True)
    t0 = time.monotonic()
    hop = peer.measure_hop(hops, gap_s)
    print(_row(f"hop (n={len(hop)})", hop) + f"   [{time.monotonic() - t0:.1f} s]")
    t0 = time.monotonic()
    pipeline = peer.measure_pipeline(runs, common.pipeline_input())
    elapsed = time.monotonic() - t0
    total = [t for t, _ in pipeline]
    compute = [c for _, c in pipeline]
    print(_row(f"pipeline total (n={len(total)})", total) + f"   [{elapsed:.1f} s]")
    print(_row("pipeline compute", compute))
    print(_row("pipeline overhead", [t - c for t, c in pipeline]), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__)
    parser.add_argument("--hops", type=int, default=100, help="hop chains per peer")
    parser.add_argument("--runs", type=int, default=20, help="pipeline runs per peer")
    parser.add_argument("--gap", type=float, default=0.05, help="pause between hops, s")
    parser.add_argument("peers", nargs="*", default=[p.removesuffix("_peer") for p in PEERS])
    args = parser.parse_args()
    for name in args.peers:
        _measure(
            importlib.import_module(f"bench.peers.{name}_peer"), args.hops, args.runs, args.gap
        )


if __name__ == "__main__":
    main()
