"""The fork server (decision 0029): a zygote forks task-serving instances for a pool whose
own process never forks again, and reports their ends."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest
from sand.grain.channel import Channel
from sand.grain.child import ChildSetup, prepare_parent
from sand.grain.pool import Pool, prepare_task_pipe
from sand.grain.result import GrainResult
from sand.grain.zygote import Zygote, ZygoteGone

from tests.unit.sdk.forking import gone, until_ended

SETUP = ChildSetup(die_with_parent=True)


def serve(channel: Channel) -> None:
    while (task := channel.next_task()) is not None:
        if task == b"hang":
            time.sleep(30)
        channel.deliver(GrainResult(output={"task": task.decode(), "ppid": os.getppid()}))


@pytest.fixture
def zygote() -> Iterator[Zygote]:
    prepare_parent(SETUP)
    zygote = Zygote.start(serve, SETUP, prepare_tasks=prepare_task_pipe)
    yield zygote
    zygote.close()
    assert gone(zygote.pid)
    os.waitpid(zygote.pid, 0)


@pytest.mark.timeout(10)
def test_pool_forksThroughZygote_resultDeliveredAndEndReportedWithUsage(zygote: Zygote) -> None:
    """The instance is the zygote's child, serves the pool's task, and its end reaches the
    pool with its exit status and what it used."""
    pool = Pool(grace_s=0.3, setup=SETUP, zygote=zygote)
    child = pool.fork(serve, grain="g", tasks=True)
    assert child.adopted and child.pid != zygote.pid
    assert pool.assign(child, b"one", taken=b"event", token="t", timeout_s=5)
    while not pool.turn(0.05).delivered:
        pass
    assert child.result is not None
    assert child.result.output == {"task": "one", "ppid": zygote.pid}
    pool.retire(child)
    (ended,) = until_ended(pool)
    assert ended.child is child and ended.clean
    assert child.cpu_ms is not None and child.cpu_ms > 0 and (child.minflt or 0) > 0


@pytest.mark.timeout(10)
def test_pool_otherWork_refused(zygote: Zygote) -> None:
    pool = Pool(grace_s=0.3, setup=SETUP, zygote=zygote)
    with pytest.raises(ValueError, match="its own work"):
        pool.fork(lambda channel: None, grain="g", tasks=True)


@pytest.mark.timeout(10)
def test_killAll_instancesOfTheZygote_reapedWithTheirSignal(zygote: Zygote) -> None:
    pool = Pool(grace_s=0.3, setup=SETUP, zygote=zygote)
    busy = pool.fork(serve, grain="g", tasks=True)
    assert pool.assign(busy, b"hang", taken=b"event", token="t", timeout_s=30)
    idle = pool.fork(serve, grain="g", tasks=True)
    ended = {end.child.pid: end for end in pool.kill_all()}
    assert set(ended) == {busy.pid, idle.pid}
    assert all(os.WTERMSIG(end.status) == signal.SIGKILL for end in ended.values())
    assert not pool.children


@pytest.mark.timeout(10)
def test_zygoteKilled_instancesDieWithIt_andForkingSaysSo(zygote: Zygote) -> None:
    pool = Pool(grace_s=0.3, setup=SETUP, zygote=zygote)
    child = pool.fork(serve, grain="g", tasks=True)
    os.kill(zygote.pid, signal.SIGKILL)
    assert gone(child.pid)
    with pytest.raises(ZygoteGone):
        for _ in range(50):
            pool.turn(0.05)
    with pytest.raises(ZygoteGone):
        zygote.fork()


@pytest.mark.timeout(10)
def test_zygote_diesWithItsParent(zygote: Zygote) -> None:
    """The zygote's socket closing (its parent gone) ends it, and its instances with it."""
    pool = Pool(grace_s=0.3, setup=SETUP, zygote=zygote)
    child = pool.fork(serve, grain="g", tasks=True)
    zygote.close()
    assert gone(zygote.pid) and gone(child.pid)
