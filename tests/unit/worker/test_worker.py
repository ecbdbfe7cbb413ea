"""GrainWorker on the shared fork model: its child takes one event from the queue, and the
parent fails the task of an instance that did not end clean (no Redis: in-memory twins)."""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
from collections.abc import Callable, Iterator
from typing import cast

import pytest
from sand.app import AppSpec
from sand.grain.pool import Ended, Pool
from sand.grain.result import GrainResult
from sand_worker.config import WorkerConfig
from sand_worker.instance import EventHandler, Grain
from sand_worker.worker import GrainWorker

from tests.unit.sdk.forking import until_ended


class PipeQueueClient:
    """Stands for the Redis client: BRPOP reads one line from a pipe."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def ping(self) -> bool:
        return True

    def brpop(self, keys: list[str], timeout: int) -> list[bytes] | None:
        with os.fdopen(self._fd, "rb") as queue:
            return [keys[0].encode(), queue.readline().rstrip(b"\n")]

    def rpush(self, key: str, value: bytes) -> None:
        raise AssertionError("the worker is alive: nothing is handed back")


class FakeEventHandler:
    """Runs an event by its name; records the failures the parent reports."""

    def __init__(self, client: PipeQueueClient) -> None:
        self.client = client
        self.failed: list[tuple[bytes, str | None, GrainResult]] = []

    def handle(self, raw: bytes, on_task: Callable[[str, float], None]) -> None:
        if raw == b"before-task":
            raise RuntimeError("cannot decode the event")
        on_task("token-1", 5.0)
        if raw == b"segfault":
            faulthandler.disable()  # pytest enables it; its dump would only be noise here
            os.kill(os.getpid(), signal.SIGSEGV)

    def fail_task(self, raw: bytes, token: str | None, result: GrainResult) -> None:
        self.failed.append((raw, token, result))


@pytest.fixture
def queue() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe()
    yield read_fd, write_fd
    for fd in (read_fd, write_fd):
        with contextlib.suppress(OSError):
            os.close(fd)


def serve_one(event: bytes | None, queue: tuple[int, int]) -> tuple[FakeEventHandler, list[Ended]]:
    """Fork one instance the way the worker does, give it ``event``, and report its end."""
    config = WorkerConfig.from_env(
        {"SAND_APP": "app", "SAND_APP_DIR": "/nonexistent", "SAND_REDIS_SOCKET": "/nonexistent"}
    )
    worker = GrainWorker(Grain(cast(AppSpec, None), "g", lambda e, c: None), config)
    handler = FakeEventHandler(PipeQueueClient(queue[0]))
    worker._handler = cast(EventHandler, handler)  # what run() builds before forking
    pool = Pool(grace_s=0.3)
    child = pool.fork(worker._serve_one_event, grain="g")
    if event is None:
        assert pool.wait(0.1) == []
        ended = pool.stop(within_s=3)
    else:
        os.write(queue[1], event + b"\n")
        ended = until_ended(pool)
    assert [e.child for e in ended] == [child]
    for end in ended:
        worker._report(cast(EventHandler, handler), end)
    return handler, ended


@pytest.mark.timeout(10)
def test_instance_handlesEventAndExitsClean_nothingReported(queue: tuple[int, int]) -> None:
    """An instance that handled its event exits clean; the parent reports nothing."""
    handler, (ended,) = serve_one(b"ok", queue)
    assert ended.clean and ended.child.taken == b"ok" and ended.child.token == "token-1"
    assert handler.failed == []


@pytest.mark.timeout(10)
def test_instance_crashInTask_failsThatTaskNamingTheSignal(queue: tuple[int, int]) -> None:
    """An instance killed by a signal in its task fails that task, with the signal named."""
    handler, _ = serve_one(b"segfault", queue)
    ((raw, token, result),) = handler.failed
    assert (raw, token, result.error) == (b"segfault", "token-1", "States.TaskFailed")
    assert result.cause == "grain 'g' process was killed by signal SIGSEGV (11)"


@pytest.mark.timeout(10)
def test_instance_failsBeforeTask_failsExecutionAsRuntime(queue: tuple[int, int]) -> None:
    """An instance that took an event but broke before its task fails it as States.Runtime."""
    handler, _ = serve_one(b"before-task", queue)
    ((raw, token, result),) = handler.failed
    assert (raw, token, result.error) == (b"before-task", None, "States.Runtime")
    assert (result.cause or "").startswith(
        "the instance of grain 'g' failed before running its task (grain 'g' process exited "
        "with status 70 (RUNNER_FAILED"
    )


@pytest.mark.timeout(10)
def test_idleInstance_stopped_nothingReported(queue: tuple[int, int]) -> None:
    """An idle instance killed at shutdown had no event: nothing to report."""
    handler, (ended,) = serve_one(None, queue)
    assert os.WTERMSIG(ended.status) == signal.SIGKILL
    assert handler.failed == []
