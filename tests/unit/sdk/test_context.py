"""The grain's context: ids, logger, deadline, dynamic next, data layer, $$ state."""

from __future__ import annotations

import logging

import pytest
from sand.data import DataStoreError
from sand.data.memory import DictDataStore
from sand.grain import Context, Data


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make_context(clock: FakeClock | None = None, **overrides: object) -> Context:
    fields: dict[str, object] = {
        "execution_id": "exec-42",
        "grain_name": "resize",
        "app_name": "thumbs",
        "deadline": 102.5,
        "data": Data({"local": DictDataStore(), "global": DictDataStore()}),
        "potential_next": ["left", "right"],
        "state": {"State": {"Name": "Resize", "RetryCount": 0}},
        "clock": clock or FakeClock(),
    }
    fields.update(overrides)
    return Context(**fields)  # type: ignore[arg-type]


def test_ids_areExposed() -> None:
    """execution_id, grain_name and app_name are what the runner was given."""
    context = make_context()
    assert (context.execution_id, context.grain_name, context.app_name) == (
        "exec-42",
        "resize",
        "thumbs",
    )


def test_remainingTime_countsDownToZero() -> None:
    """remaining_time_ms follows the injected clock and never goes negative."""
    clock = FakeClock()
    context = make_context(clock)
    assert context.remaining_time_ms() == 2500
    clock.now = 102.0
    assert context.remaining_time_ms() == 500
    clock.now = 200.0
    assert context.remaining_time_ms() == 0


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_logger_recordsCarryExecutionId() -> None:
    """Every record of context.logger carries the execution id, app and grain."""
    context = make_context()
    assert isinstance(context.logger, logging.Logger)
    collect = Collect()
    parent = logging.getLogger("sand.grain.thumbs.resize")
    parent.addHandler(collect)
    parent.setLevel(logging.INFO)
    try:
        context.logger.info("resized %d images", 3)
    finally:
        parent.removeHandler(collect)
        parent.setLevel(logging.NOTSET)
    (record,) = collect.records
    assert record.getMessage() == "resized 3 images"
    assert record.execution_id == "exec-42"  # type: ignore[attr-defined]
    assert record.grain == "resize"  # type: ignore[attr-defined]
    assert record.app == "thumbs"  # type: ignore[attr-defined]


def test_logger_perInvocation_doesNotAccumulateFilters() -> None:
    """Two contexts of the same grain have independent loggers (no leaked execution ids)."""
    first, second = make_context(), make_context(execution_id="exec-43")
    assert first.logger is not second.logger
    assert len(second.logger.filters) == 1


def test_addNext_allowedGrains_areRecordedOnce() -> None:
    """add_next and send record grains of potentialNext, in order, without duplicates."""
    context = make_context()
    assert context.next_grains is None
    context.add_next("right")
    context.send("left")
    context.add_next("right")
    assert context.next_grains == ("right", "left")


def test_addNext_grainOutsidePotentialNext_raisesNamingAllowedSet() -> None:
    """Choosing a grain that is not in potentialNext raises ValueError naming both."""
    context = make_context()
    with pytest.raises(ValueError, match=r"cannot send to 'up'.*allowed: left, right"):
        context.add_next("up")
    with pytest.raises(ValueError, match="allowed: none"):
        make_context(potential_next=()).send("left")


def test_state_isACopyOfTheContextObject() -> None:
    """context.state is the $$ object; changing it does not change the runner's copy."""
    given = {"State": {"Name": "Resize"}}
    context = make_context(state=given)
    context.state["State"]["Name"] = "changed"
    assert given["State"]["Name"] == "Resize"
    assert context.state["State"]["Name"] == "changed"


def test_data_roundTripsBytesAndJson() -> None:
    """Values are bytes or JSON; get returns the default for a missing key."""
    data = make_context().data
    data.put("raw", b"\x00\x01")
    data.put("doc", {"a": [1, 2.5, None, True]})
    assert data.get("raw") == b"\x00\x01"
    assert data.get("doc") == {"a": [1, 2.5, None, True]}
    assert data.get("missing") is None
    assert data.get("missing", 7) == 7


def test_data_scopesAreSeparate() -> None:
    """local and global are two key spaces."""
    data = make_context().data
    data.put("k", 1)
    data.put("k", 2, scope="global")
    assert (data.get("k"), data.get("k", scope="global")) == (1, 2)
    assert data.delete("k") is True
    assert data.delete("k") is False
    assert data.get("k", scope="global") == 2


def test_data_keys_filtersByPrefixSorted() -> None:
    """keys(prefix) lists matching keys in order."""
    data = make_context().data
    for key in ("img/2", "img/1", "meta/1"):
        data.put(key, key)
    assert data.keys("img/") == ["img/1", "img/2"]
    assert data.keys() == ["img/1", "img/2", "meta/1"]


def test_data_rejectsBadKeysValuesAndScopes() -> None:
    """Non-JSON values, empty or non-string keys and unknown scopes raise."""
    data = make_context().data
    with pytest.raises(TypeError, match="bytes or JSON-serialisable"):
        data.put("k", {1, 2})
    with pytest.raises(ValueError, match="must not be empty"):
        data.put("", 1)
    with pytest.raises(TypeError, match="must be a string"):
        data.get(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="scope must be 'local' or 'global', got 'cluster'"):
        data.get("k", scope="cluster")  # type: ignore[arg-type]


def test_data_missingScopeBackend_saysSo() -> None:
    """A context without a global store says the layer is not available."""
    data = Data({"local": DictDataStore()})
    with pytest.raises(ValueError, match="global data layer is not available"):
        data.get("k", scope="global")


def test_data_corruptValue_raisesDataStoreError() -> None:
    """A stored value with an unknown encoding is reported, not misread."""
    store = DictDataStore()
    store.put("k", b"Xjunk")
    with pytest.raises(DataStoreError, match="unknown encoding"):
        Data({"local": store}).get("k")
