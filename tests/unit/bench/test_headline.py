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
    """The hop target is a ratio to the same run's Redis floor and peers: 1.0 ≤ 1.5 × 0.5
    fails, so the hop is missed even though it beats Celery."""
    rows = headline.table(headline.figures(_results()), {})
    hop = next(r for r in rows if r.startswith("| local hop p50"))
    assert "**missed**" in hop
    cpu = next(r for r in rows if r.startswith("| CPU of the whole stack"))
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
