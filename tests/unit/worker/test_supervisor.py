"""WorkerSupervisor, the sandbox's main process: it keeps a worker per grain alive, stops
them all within 3 s of SIGTERM (also workers that ignore it), stops when the host agent's
pipe reaches end of file, and its workers die with it (decision 0021).

Each test runs the supervisor in a forked process, as a sandbox does; its workers report
their pids through a pipe."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NoReturn

import pytest
from sand_worker.supervisor import STOP_GRACE_S, WorkerSupervisor

from tests.unit.sdk.forking import gone

STOP_BOUND_S = 3.0  # the bound for a whole sandbox's stop


@dataclass
class Running:
    """A supervisor in a forked process, and the pipe its workers write their pids to."""

    pid: int
    pids_r: int
    agent_w: int | None

    def worker_pids(self, count: int, within_s: float = 5.0) -> list[int]:
        """The pids of the next ``count`` workers that started."""
        pids: list[int] = []
        buffer = b""
        give_up = time.monotonic() + within_s
        while len(pids) < count and time.monotonic() < give_up:
            buffer += os.read(self.pids_r, 64)
            *lines, buffer = buffer.split(b"\n")
            pids += [int(line) for line in lines]
        assert len(pids) >= count, f"only {pids} started within {within_s} s"
        return pids

    def wait_exit(self, within_s: float) -> float:
        """Seconds until the supervisor exited; fails the test beyond ``within_s``."""
        started = time.monotonic()
        while time.monotonic() - started < within_s:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return time.monotonic() - started
            time.sleep(0.01)
        raise AssertionError(f"the supervisor did not exit within {within_s} s")


def _worker(pids_w: int, *, ignore_term: bool = False, exit_after_s: float | None = None):
    def serve(grain: str) -> NoReturn:
        if ignore_term:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.write(pids_w, f"{os.getpid()}\n".encode())
        if exit_after_s is not None:
            time.sleep(exit_after_s)
            os._exit(1)
        while True:
            time.sleep(60)

    return serve


@contextlib.contextmanager
def supervisor(
    grains: list[str], *, watch_agent: bool = False, **worker: object
) -> Iterator[Running]:
    pids_r, pids_w = os.pipe()
    agent_r, agent_w = os.pipe() if watch_agent else (None, None)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(pids_r)
            if agent_w is not None:
                os.close(agent_w)
            serve = _worker(pids_w, **worker)  # type: ignore[arg-type]
            code = WorkerSupervisor(grains, serve, agent_fd=agent_r).run()
        finally:
            os._exit(code)
    os.close(pids_w)
    if agent_r is not None:
        os.close(agent_r)
    running = Running(pid, pids_r, agent_w)
    try:
        yield running
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        for fd in (pids_r, agent_w):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)


@pytest.mark.timeout(15)
def test_sigterm_stopsSupervisorAndWorkersWithinThreeSeconds() -> None:
    """SIGTERM: the workers (which exit on it) and the supervisor are gone well within 3 s."""
    with supervisor(["a", "b"]) as running:
        workers = running.worker_pids(2)
        assert all(not gone(pid, within_s=0) for pid in workers)  # positive control
        os.kill(running.pid, signal.SIGTERM)
        took = running.wait_exit(STOP_BOUND_S)
        print(f"supervisor stopped {took * 1000:.0f} ms after SIGTERM")
        assert all(gone(pid, within_s=0.5) for pid in workers)


@pytest.mark.timeout(15)
def test_sigterm_workerIgnoringIt_isKilledAfterTheGrace() -> None:
    """A worker that ignores SIGTERM is killed after STOP_GRACE_S; the stop stays within 3 s."""
    with supervisor(["a"], ignore_term=True) as running:
        (worker,) = running.worker_pids(1)
        os.kill(running.pid, signal.SIGTERM)
        took = running.wait_exit(STOP_BOUND_S)
        assert took >= STOP_GRACE_S * 0.9
        assert gone(worker, within_s=0.5)


@pytest.mark.timeout(15)
def test_agentPipeClosed_stopsSupervisorAndWorkers() -> None:
    """End of file on the agent's pipe (the agent died) stops everything within 3 s."""
    with supervisor(["a"], watch_agent=True) as running:
        (worker,) = running.worker_pids(1)
        time.sleep(0.2)
        assert os.waitpid(running.pid, os.WNOHANG) == (0, 0)  # positive control: it serves
        assert running.agent_w is not None
        os.close(running.agent_w)
        running.agent_w = None
        running.wait_exit(STOP_BOUND_S)
        assert gone(worker, within_s=0.5)


@pytest.mark.timeout(15)
def test_supervisorKilled_workersDieWithIt() -> None:
    """SIGKILL of the supervisor takes its workers down (PR_SET_PDEATHSIG)."""
    with supervisor(["a", "b"]) as running:
        workers = running.worker_pids(2)
        os.kill(running.pid, signal.SIGKILL)
        running.wait_exit(STOP_BOUND_S)
        assert all(gone(pid, within_s=2) for pid in workers)


@pytest.mark.timeout(15)
def test_workerDies_isRestartedAfterTheBackoff() -> None:
    """A worker that exits is replaced (the first back-off is 0.1 s)."""
    with supervisor(["a"], exit_after_s=0.1) as running:
        first, second = running.worker_pids(2, within_s=3)
        assert first != second
        os.kill(running.pid, signal.SIGTERM)
        running.wait_exit(STOP_BOUND_S)
