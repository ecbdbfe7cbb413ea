"""A load generator for SAND's HTTP API (through nginx): closed loop with N clients,
open loop with Poisson arrivals at a given rate (with optional bursts), and replay of a
timestamped trace. Each request's latency is recorded with the time it was sent, so
series can be cut by time (bursts) or summarised (p50/p99).

Threads, one ``requests.Session`` per client: the API is I/O-bound and a Python
client process is enough up to a few hundred calls per second on this machine; the
open loop reports how late it sent requests (``lag_ms``) so a saturated generator is
visible rather than silently lowering the load.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import requests
from rich.progress import Progress

Call = Callable[[requests.Session], Any]


@dataclass(frozen=True, slots=True)
class Sample:
    """One request: when it was due and sent (seconds since the run began), how long it
    took, whether it succeeded, and what the call returned (``None`` on failure)."""

    due_s: float
    sent_s: float
    latency_ms: float
    ok: bool
    result: Any = None

    @property
    def lag_ms(self) -> float:
        return (self.sent_s - self.due_s) * 1000


def _timed(session: requests.Session, call: Call, t0: float, due: float) -> Sample:
    sent = time.perf_counter()
    try:
        result = call(session)
        ok = True
    except (requests.RequestException, ValueError, KeyError):
        result, ok = None, False
    done = time.perf_counter()
    return Sample(due - t0, sent - t0, (done - sent) * 1000, ok, result)


def _sessions(count: int) -> list[requests.Session]:
    sessions = []
    for _ in range(count):
        session = requests.Session()
        adapter = requests.adapters.HTTPAdapter(pool_connections=1, pool_maxsize=4)
        session.mount("http://", adapter)
        sessions.append(session)
    return sessions


def closed_loop(
    call: Call, clients: int, requests_per_client: int, label: str = "closed loop"
) -> list[Sample]:
    """``clients`` threads, each sending its next request when the previous answered."""
    samples: list[Sample] = []
    lock = threading.Lock()
    t0 = time.perf_counter()
    with Progress(transient=True) as progress:
        task = progress.add_task(label, total=clients * requests_per_client)

        def client(session: requests.Session) -> None:
            for _ in range(requests_per_client):
                now = time.perf_counter()
                sample = _timed(session, call, t0, now)
                with lock:
                    samples.append(sample)
                progress.advance(task)

        with ThreadPoolExecutor(max_workers=clients) as pool:
            list(pool.map(client, _sessions(clients)))
    return samples


def poisson_schedule(
    rate_per_s: float,
    duration_s: float,
    seed: int = 1,
    bursts: Sequence[tuple[float, float, float]] = (),
) -> list[float]:
    """Arrival times (s) of a Poisson process at ``rate_per_s``; each burst
    ``(start_s, length_s, factor)`` multiplies the rate inside its window."""
    rng = random.Random(seed)
    times: list[float] = []
    t = 0.0
    while True:
        rate = rate_per_s
        for start, length, factor in bursts:
            if start <= t < start + length:
                rate = rate_per_s * factor
        t += rng.expovariate(rate)
        if t >= duration_s:
            return times
        times.append(t)


def open_loop(
    call: Call | Sequence[Call],
    arrivals: Iterable[float],
    workers: int = 64,
    label: str = "open loop",
) -> list[Sample]:
    """Sends one request at each arrival time (seconds from now), whatever the latency of
    earlier ones: the load does not back off when the system slows down. ``call`` is one
    call for every arrival, or one per arrival."""
    schedule = list(arrivals)
    calls = [call] * len(schedule) if callable(call) else list(call)
    if len(calls) != len(schedule):
        raise ValueError(f"{len(calls)} calls for {len(schedule)} arrivals")
    sessions = _sessions(workers)
    free = list(range(workers))
    lock = threading.Lock()
    samples: list[Sample] = []
    with Progress(transient=True) as progress, ThreadPoolExecutor(max_workers=workers) as pool:
        task = progress.add_task(label, total=len(schedule))
        t0 = time.perf_counter()

        def send(due: float, this: Call) -> None:
            with lock:
                slot = free.pop() if free else None
            session = sessions[slot] if slot is not None else requests.Session()
            sample = _timed(session, this, t0, due)
            with lock:
                samples.append(sample)
                if slot is not None:
                    free.append(slot)
            progress.advance(task)

        futures = []
        for offset, this in zip(schedule, calls, strict=True):
            due = t0 + offset
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            futures.append(pool.submit(send, due, this))
        for future in futures:
            future.result()
    return sorted(samples, key=lambda s: s.due_s)


def replay(call_for: Callable[[Any], Call], trace: Iterable[tuple[float, Any]]) -> list[Sample]:
    """Replays a timestamped trace ``(offset_s, payload)``: each payload is sent at its
    offset by the call that ``call_for(payload)`` returns."""
    entries = sorted(trace, key=lambda e: e[0])
    return open_loop(
        [call_for(payload) for _, payload in entries],
        [offset for offset, _ in entries],
        label="trace replay",
    )


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) by nearest rank; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
