"""InMemoryStore honours the ExecutionStore contract, also under concurrency."""

from __future__ import annotations

import threading

from sand_workflows.store import ExecutionStore, InMemoryStore


def test_in_memory_store_satisfies_protocol() -> None:
    """InMemoryStore is usable where an ExecutionStore is expected."""
    store: ExecutionStore = InMemoryStore()
    store.open_group("g", 1, "p")
    assert store.is_open(["g"])


def test_open_group_is_idempotent() -> None:
    """Opening an existing group changes nothing (replayed events)."""
    store = InMemoryStore()
    store.open_group("g", 2, "first")
    store.record_result("g", 0, "a")
    store.open_group("g", 5, "second")
    outcome = store.record_result("g", 1, "b")
    assert outcome.completed and outcome.results == ("a", "b") and outcome.parent == "first"


def test_record_result_first_write_wins_and_completes_once() -> None:
    """A filled slot is not overwritten; exactly one call sees completion."""
    store = InMemoryStore()
    store.open_group("g", 2, "p")
    assert store.record_result("g", 0, "a").accepted
    assert not store.record_result("g", 0, "again").accepted
    done = store.record_result("g", 1, "b")
    assert done.completed and done.results == ("a", "b")
    assert not store.record_result("g", 1, "b").accepted
    assert not store.is_open(["g"])


def test_record_result_rejects_unknown_group_and_bad_index() -> None:
    """Unknown groups and out-of-range slots are not accepted."""
    store = InMemoryStore()
    assert not store.record_result("nope", 0, "x").accepted
    store.open_group("g", 1, "p")
    assert not store.record_result("g", 3, "x").accepted


def test_close_group_returns_parent_once_and_blocks_results() -> None:
    """close_group hands the parent to the first caller only; results are then refused."""
    store = InMemoryStore()
    store.open_group("g", 2, "p")
    assert store.close_group("g") == "p"
    assert store.close_group("g") is None
    assert not store.record_result("g", 0, "a").accepted
    assert store.claim_items("g", 1) is None


def test_close_after_completion_returns_none() -> None:
    """A completed group cannot be closed (its continuation already ran)."""
    store = InMemoryStore()
    store.open_group("g", 1, "p")
    store.record_result("g", 0, "a")
    assert store.close_group("g") is None


def test_claim_items_hands_out_each_index_once() -> None:
    """claim_items advances a cursor and never passes the size."""
    store = InMemoryStore()
    store.open_group("g", 3, "p")
    first = store.claim_items("g", 2)
    assert first is not None and first.indices == (0, 1) and first.parent == "p"
    second = store.claim_items("g", 5)
    assert second is not None and second.indices == (2,)
    third = store.claim_items("g", 1)
    assert third is not None and third.indices == ()


def test_is_open_needs_every_group_open() -> None:
    """is_open is true only when every listed group exists and is open."""
    store = InMemoryStore()
    store.open_group("a", 1, "p")
    store.open_group("b", 1, "p")
    store.close_group("b")
    assert store.is_open(["a"]) and not store.is_open(["a", "b"]) and not store.is_open(["zz"])


def test_delete_group_forgets_it() -> None:
    """delete_group removes the group."""
    store = InMemoryStore()
    store.open_group("g", 1, "p")
    store.delete_group("g")
    assert store.group_count() == 0


def test_concurrent_results_complete_exactly_once() -> None:
    """Under racing threads, exactly one record_result completes the group."""
    for _ in range(20):
        store = InMemoryStore()
        store.open_group("g", 16, "p")
        completions = []
        barrier = threading.Barrier(16)

        def report(
            i: int,
            store: InMemoryStore = store,
            completions: list[int] = completions,
            barrier: threading.Barrier = barrier,
        ) -> None:
            barrier.wait()
            if store.record_result("g", i, str(i)).completed:
                completions.append(i)

        threads = [threading.Thread(target=report, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=5)
        assert len(completions) == 1


def test_concurrent_close_has_one_winner() -> None:
    """Racing close_group calls: exactly one gets the parent."""
    store = InMemoryStore()
    store.open_group("g", 2, "p")
    winners = []
    barrier = threading.Barrier(8)

    def close() -> None:
        barrier.wait()
        if store.close_group("g") is not None:
            winners.append(1)

    threads = [threading.Thread(target=close) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=5)
    assert winners == [1]
