"""The benchmark's headline keeps the score: figures, targets and the previous run."""

from __future__ import annotations

from pathlib import Path

from bench import headline


def _results() -> dict[str, object]:
    return {
        "cpu per invocation": {"grain workers and instances": 3.0, "redis": 1.0, "wall": 9.0},
        "hop": [1.0] * 98 + [5.0, 5.0],
        "bus latency": {"python redis": [0.5] * 98 + [1.0, 1.0]},
        "hop celery": [2.0] * 10,
        "overhead by clients": {1: [1.5] * 100},
        "memory": {0: (40.0, 90.0), 10: (60.0, 110.0), 20: (80.0, 130.0)},
    }


def test_figures_sumCpuWithoutWall_andTakePercentiles() -> None:
    """CPU per call is the sum over processes (wall time is not CPU); hops give p50/p99."""
    figures = headline.figures(_results())
    assert figures["cpu_ms_per_call"] == 4.0
    assert figures["hop_p50_ms"] == 1.0 and figures["hop_p99_ms"] == 5.0
    assert figures["redis_floor_p50_ms"] == 0.5
    assert figures["memory_mb_per_call"] == 2.0


def test_table_judgesRatioTargetsWithinTheRun() -> None:
    """The hop target compares with the same run's peers: without Ray it is not judged;
    with both peers slower and a p99 of 5.0 > 4 × 1.0 (the Redis floor's p99) it is missed;
    with the tail within 4× it is met."""
    figures = headline.figures(_results())
    hop = next(r for r in headline.table(figures, {}) if r.startswith("| local hop p50, fork"))
    assert hop.endswith("| – |")  # Celery alone: not judged
    figures["hop_ray_p50_ms"] = 3.0
    hop = next(r for r in headline.table(figures, {}) if r.startswith("| local hop p50, fork"))
    assert "**missed**" in hop
    figures["hop_p99_ms"] = 3.5
    hop = next(r for r in headline.table(figures, {}) if r.startswith("| local hop p50, fork"))
    assert "| met |" in hop
    cpu = next(r for r in headline.table(figures, {}) if r.startswith("| CPU of the whole"))
    assert "| met |" in cpu


def test_table_marksARegressionAgainstThePreviousRun(tmp_path: Path) -> None:
    """A figure 10 % worse than the committed run's is marked worse; the file round-trips."""
    path = tmp_path / "headline.json"
    headline.save({"cpu_ms_per_call": 2.0}, "quick", path)
    rows = headline.table(headline.figures(_results()), headline.previous(path))
    cpu = next(r for r in rows if r.startswith("| CPU of the whole stack"))
    assert "2.00×" in cpu and "**worse**" in cpu


def test_previous_missingOrBrokenFile_isEmpty(tmp_path: Path) -> None:
    """No committed run (or an unreadable one) compares with nothing rather than failing."""
    assert headline.previous(tmp_path / "absent.json") == {}
    (tmp_path / "bad.json").write_text("{not json")
    assert headline.previous(tmp_path / "bad.json") == {}


def test_figures_reuseSeries_keptApartFromForkPerEvent() -> None:
    """The reuse-mode series give their own `_reuse` figures; the fork-per-event ones are
    untouched by them, and the 400/s reuse throughput target is judged on its own."""
    results = {
        **_results(),
        "cpu per invocation (reuse)": {"grain workers and instances": 0.5, "wall": 4.0},
        "hop (reuse)": [0.6] * 100,
        "overhead by clients (reuse)": {1: [1.0] * 100},
        "pipeline sand (reuse)": [(30.0, 20.0)] * 3,
    }
    figures = headline.figures(results)
    assert figures["cpu_ms_per_call"] == 4.0 and figures["cpu_reuse_ms_per_call"] == 0.5
    assert figures["hop_reuse_p50_ms"] == 0.6 and figures["hop_p50_ms"] == 1.0
    assert figures["overhead_reuse_p99_ms"] == 1.0
    assert figures["pipeline_sand_reuse_overhead_p50_ms"] == 10.0
    assert "pipeline_sand_overhead_p50_ms" not in figures
    rows = headline.table(figures, {})
    assert any(r.startswith("| local hop p50, reuse") and "0.60 ms" in r for r in rows)
    reuse_rate = next(r for r in rows if r.startswith("| empty one-grain calls/s") and "reuse" in r)
    assert "not measured" in reuse_rate


def test_reuseVariant_optsEveryGrainIn_underItsOwnName(tmp_path: Path) -> None:
    """The reuse copy of the hop app loads, is named hop-reuse, and every grain serves up
    to REUSE_EVENTS events per instance."""
    from sand.app import load_app

    from bench import sand_series

    app = load_app(sand_series.reuse_variant(sand_series.HOP_APP, tmp_path))
    assert app.name == "hop-reuse"
    assert {g.events_per_instance for g in app.grains.values()} == {sand_series.REUSE_EVENTS}
    assert set(app.grains) == set(load_app(sand_series.HOP_APP).grains)
