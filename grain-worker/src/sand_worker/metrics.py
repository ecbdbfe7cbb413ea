"""A grain's counters, kept on the local bus for the host agent's ``/metrics`` (decision 0019).

A grain worker has no network and must not serve HTTP, and each of its instances is a
process that lives for one event (or ``events_per_instance`` of them): a registry in
memory (``prometheus_client``) would die with it. So the counters live in one Redis hash
per grain, ``sand:metrics:<app>:<grain>`` (its app's ACL user may write it), and:

- an instance adds its event's figures to the pipeline that already carries its outputs
  (:meth:`GrainMetrics.record`): three HINCRBY more (four when the grain failed) in a round
  trip it makes anyway, about 11 us of the instance's CPU (decision 0019);
- the worker counts what only it sees — instances killed at their deadline or lost —
  (:meth:`GrainMetrics.lost`) and sets the number of instances running a task now,
  with its readiness key (:meth:`GrainMetrics.in_flight`).

The host agent reads the hash when it is scraped and exposes Prometheus metrics
labelled ``app``/``grain``/``error``; it treats the hash as tenant input (the grain's
code could write anything there). Field names are contracts (``METRIC_*``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sand import keys
from sand.contracts import metric_error_label
from sand.grain.result import GrainError, GrainResult
from sand.localbus import LocalBus
from sand_contracts import constants as _c

# the run latency buckets, seconds, with their field names; the last is "+Inf"
BOUNDS_S: tuple[float, ...] = tuple(float(b) for b in _c.METRIC_RUN_BUCKETS_S)
_BUCKET_FIELDS: tuple[str, ...] = (
    *(_c.METRIC_RUN_BUCKET + b for b in _c.METRIC_RUN_BUCKETS_S),
    _c.METRIC_RUN_BUCKET + "+Inf",
)

Later = Callable[..., None]
"""``Outbox.later``: queue ``pipe.<command>(*args)`` on the pipeline of an event's outputs."""


def bucket_field(duration_s: float) -> str:
    """The field of the (non-cumulative) bucket a run of ``duration_s`` falls in."""
    for bound, name in zip(BOUNDS_S, _BUCKET_FIELDS, strict=False):
        if duration_s <= bound:
            return name
    return _BUCKET_FIELDS[-1]


def error_field(error: str | None) -> str:
    """The counter field of a failure of type ``error`` (an odd name counts as ``Other``; the
    agent applies the same rule again as it reads)."""
    return _c.METRIC_FAILED + metric_error_label(error)


class GrainMetrics:
    """The counters of one grain of one app. Holds no connection; thread-compatible."""

    def __init__(self, app: str, grain: str) -> None:
        self.key = keys.metrics_key(app, grain)

    def record(self, later: Later, result: GrainResult | None) -> None:
        """Count one event an instance handled and, when a grain ran (``result``), its run:
        queued on the pipeline that sends the event's outputs (no round trip of its own)."""
        later("hincrby", self.key, _c.METRIC_TAKEN, 1)
        if result is None:
            return
        later("hincrby", self.key, _c.METRIC_RUN_US, max(0, int(result.duration_ms * 1000)))
        later("hincrby", self.key, bucket_field(result.duration_ms / 1000), 1)
        if not result.ok:
            later("hincrby", self.key, error_field(result.error), 1)
            if result.error == GrainError.TIMEOUT:
                # the instance's own deadline stopped the grain (the worker kills only those
                # that do not stop then: counted in :meth:`lost`)
                later("hincrby", self.key, _c.METRIC_TIMEOUTS, 1)

    def lost(self, client: LocalBus, result: GrainResult, *, timed_out: bool) -> None:
        """Count an instance that took an event and ended without finishing it (killed at
        its deadline, or dead of a signal or an exit): one round trip, off the event path."""
        pipe = client.pipeline(transaction=False)
        pipe.hincrby(self.key, _c.METRIC_TIMEOUTS if timed_out else _c.METRIC_LOST, 1)
        pipe.hincrby(self.key, error_field(result.error), 1)
        pipe.execute()

    def in_flight(self, client: LocalBus, count: int) -> None:
        """Set how many instances run a task now (a gauge; the worker refreshes it)."""
        client.hset(self.key, _c.METRIC_IN_FLIGHT, str(count))


def parse(fields: dict[Any, Any]) -> dict[str, int]:
    """The counters of a hash as HGETALL returns it: integer fields only (for tests and
    tools; the agent has its own, stricter reader)."""
    counters: dict[str, int] = {}
    for raw_name, raw_value in fields.items():
        name = raw_name.decode() if isinstance(raw_name, bytes) else str(raw_name)
        try:
            counters[name] = int(raw_value)
        except (TypeError, ValueError):
            continue
    return counters
