"""The grain's counters in its Redis hash (sand_worker.metrics), against a real redis-server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from sand.grain.result import GrainResult
from sand.localbus import LocalBus
from sand_worker.metrics import GrainMetrics, bucket_field, error_field, parse

from tests.unit.redis_server import bus_of, private_redis

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[redis.Redis]:
    """A private redis-server on a unix socket (skipped when the binary is absent)."""
    with private_redis(tmp_path) as conn:
        yield conn


@pytest.fixture
def bus(client: redis.Redis) -> LocalBus:
    """The worker's own client of the same server."""
    return bus_of(client)


class Later:
    """Stands for ``Outbox.later``: queues ``pipe.<command>(*args)``."""

    def __init__(self) -> None:
        self.commands: list[tuple[str, tuple[Any, ...]]] = []

    def __call__(self, command: str, *args: Any) -> None:
        self.commands.append((command, args))

    def send(self, bus: LocalBus) -> None:
        pipe = bus.pipeline(transaction=False)
        for command, args in self.commands:
            getattr(pipe, command)(*args)
        pipe.execute()


def test_bucketField_picksTheFirstBoundAtOrAbove() -> None:
    """A run falls in the first bucket whose bound is >= its duration; past the last, +Inf."""
    assert bucket_field(0.001) == "run_le:0.005"
    assert bucket_field(0.005) == "run_le:0.005"
    assert bucket_field(0.3) == "run_le:0.5"
    assert bucket_field(301) == "run_le:+Inf"


def test_errorField_oddNames_countAsOther() -> None:
    """An error type the agent would not accept as a label is counted as Other here already."""
    assert error_field("KeyError") == "failed:KeyError"
    assert error_field("States.Timeout") == "failed:States.Timeout"
    assert error_field("bad name") == "failed:Other"
    assert error_field("x" * 65) == "failed:Other"
    assert error_field(None) == "failed:Other"


def test_record_countsEventsRunsAndFailures(client: redis.Redis, bus: LocalBus) -> None:
    """Each handled event counts as taken; each grain run, its duration, bucket and error."""
    metrics = GrainMetrics("shop", "resize")
    later = Later()
    metrics.record(later, GrainResult(output=1, duration_ms=3.0))
    metrics.record(later, GrainResult.failure("KeyError", "no", duration_ms=700.0))
    metrics.record(later, GrainResult.failure("States.Timeout", "late", duration_ms=2000.0))
    metrics.record(later, None)  # an event that ran no grain here (a join, a timer)
    later.send(bus)
    counters = parse(client.hgetall("sand:metrics:shop:resize"))
    assert counters == {
        "taken": 4,
        "run_us": 2_703_000,
        "run_le:0.005": 1,
        "run_le:1": 1,
        "run_le:2.5": 1,
        "failed:KeyError": 1,
        "failed:States.Timeout": 1,
        "timeouts": 1,
    }


def test_lostAndInFlight_countedByTheWorker(client: redis.Redis, bus: LocalBus) -> None:
    """The worker counts instances killed at their deadline or lost, and sets in_flight."""
    metrics = GrainMetrics("shop", "resize")
    metrics.lost(bus, GrainResult.failure("States.Timeout", "late"), timed_out=True)
    metrics.lost(bus, GrainResult.failure("States.Runtime", "SIGSEGV"), timed_out=False)
    metrics.in_flight(bus, 4)
    counters = parse(client.hgetall("sand:metrics:shop:resize"))
    assert counters == {
        "timeouts": 1,
        "lost": 1,
        "failed:States.Timeout": 1,
        "failed:States.Runtime": 1,
        "in_flight": 4,
    }


def test_record_costOnTheEventPipeline(client: redis.Redis, bus: LocalBus) -> None:
    """What the counters add to an event's output pipeline (agent copies, result, reply):
    printed for decision 0019; asserts the counts came through."""
    metrics = GrainMetrics("shop", "resize")
    result = GrainResult(output=1, duration_ms=3.0)
    rounds = 2000

    def outputs(later: Later) -> None:
        later("lpush", "sand:agent:h", b"x" * 300, b"y" * 300)
        later("set", "sand:result:e", b"{}" * 100)
        later("lpush", "sand:reply:fe", b"z" * 300)

    def run(with_metrics: bool) -> float:
        start = time.perf_counter()
        for _ in range(rounds):
            later = Later()
            outputs(later)
            if with_metrics:
                metrics.record(later, result)
            later.send(bus)
        return (time.perf_counter() - start) / rounds * 1e6

    run(True)  # warm up
    without = min(run(False) for _ in range(3))
    with_ = min(run(True) for _ in range(3))
    print(f"event pipeline: {without:.1f} us without counters, {with_:.1f} us with")
    assert parse(client.hgetall("sand:metrics:shop:resize"))["taken"] == rounds * 4
