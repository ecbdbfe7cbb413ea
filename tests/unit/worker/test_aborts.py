"""The worker's view of stopped executions, shared with its forked instances."""

from __future__ import annotations

import os

from sand_worker.aborts import MAX_IDS, AbortedExecutions


class _Zset:
    def __init__(self, ids: list[str]) -> None:
        self.ids = ids
        self.asked: list[tuple[str, int, int]] = []

    def zrevrange(self, key: str, start: int, end: int) -> list[bytes]:
        self.asked.append((key, start, end))
        return [i.encode() for i in self.ids]


def test_an_instance_forked_before_the_stop_sees_it() -> None:
    aborted = AbortedExecutions("shop")
    read_fd, write_fd = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the instance: forked before anything was stopped
        os.close(go_w)
        os.write(write_fd, str(aborted.any()).encode())
        os.read(go_r, 1)
        answer = f",{aborted.any()},{aborted.contains('e2')},{aborted.contains('e9')}"
        os.write(write_fd, answer.encode())
        os._exit(0)
    assert os.read(read_fd, 5) == b"False"
    client = _Zset(["e1", "e2"])
    assert aborted.refresh(client) == frozenset({"e1", "e2"})  # type: ignore[arg-type]
    assert client.asked == [("sand:aborted:shop", 0, MAX_IDS - 1)]
    os.write(go_w, b"x")
    os.waitpid(pid, 0)
    assert os.read(read_fd, 100).decode() == ",True,True,False"


def test_a_later_view_replaces_the_earlier_one() -> None:
    aborted = AbortedExecutions("shop")
    assert not aborted.any() and not aborted.contains("e1")
    aborted.publish(["e1"])
    assert aborted.contains("e1")
    aborted.publish(["e3", "e4"])
    assert not aborted.contains("e1") and aborted.contains("e4")
    aborted.publish([])
    assert not aborted.any() and not aborted.contains("e4")


def test_at_most_max_ids_are_kept_and_odd_ids_are_skipped() -> None:
    aborted = AbortedExecutions("shop")
    aborted.publish(["bad\nid", *(f"e{i}" for i in range(MAX_IDS + 50))])
    assert aborted.contains("e0") and aborted.contains(f"e{MAX_IDS - 2}")
    assert not aborted.contains(f"e{MAX_IDS + 10}") and not aborted.contains("bad")
