"""The grain worker: one per grain; forks one instance per event, ahead of the event.

The parent imports the grain once and keeps ``prefork`` children forked *before*
events arrive, each blocked on the grain's queue with its own connection
(DESIGN.md: forking after the event costs ~6 ms here, mostly copy-on-write
faults; a child forked ahead takes the event at the cost of a plain consumer).
A child that takes an event tells the parent at once, and the parent forks its
replacement, up to ``max_concurrency`` instances in flight; beyond that events
wait in the queue. Every event still gets a fresh process, which exits after it.

The parent enforces deadlines (kills the instance's process group after its
task deadline plus grace) and turns every abnormal end of an instance into a
failed task, so no event that was taken is lost silently.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import select
import signal
import struct
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn, cast

from sand import keys
from sand.grain.runner import GrainResult, exit_child, prepare_child_process, result_from_exit

from sand_worker.bus import connect, warm_up
from sand_worker.config import WorkerConfig
from sand_worker.instance import EventHandler, Grain

# While an idle child remains, the worker waits this long after an event was taken
# before it forks a replacement, unless the busy instances finish first.
REFILL_DELAY_S = 0.05
# An idle child wakes this often to notice that its parent is gone.
BRPOP_TIMEOUT_S = 5
READY_TTL_S = 10
_FRAME = struct.Struct("!cI")
TOOK, TASK = b"T", b"K"


@dataclass(slots=True)
class _Child:
    pid: int
    fd: int
    buffer: bytearray = field(default_factory=bytearray)
    event: bytes | None = None  # the raw event once taken
    token: str | None = None  # the task it is running
    timeout_s: float = 0.0
    kill_at: float | None = None
    killed_for_timeout: bool = False


class GrainWorker:
    """Serves one grain until SIGTERM. ``run`` blocks."""

    def __init__(
        self, grain: Grain, config: WorkerConfig, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._grain = grain
        self._config = config
        self._clock = clock
        self._children: dict[int, _Child] = {}
        self._stopping = False
        self._queue = keys.queue_key(config.app, grain.name)
        self._handler: EventHandler | None = None
        self._last_take = 0.0

    # -- parent ----------------------------------------------------------------------------

    def run(self) -> None:
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)
        client = connect(self._config)
        # Built once here and inherited by every child: workflow engines, stores and the
        # client (redis-py's pool opens a fresh connection in a forked child).
        reporter = EventHandler(self._grain, self._config, client)
        self._handler = reporter
        warm_up()
        # Objects alive now are never freed: keep the collector from touching
        # (and copying) their pages in every child.
        gc.collect()
        gc.freeze()
        ready_at = 0.0
        _log(self._grain.name, "worker ready", pid=os.getpid(), prefork=self._config.prefork)
        while not self._stopping:
            self._fill_pool()
            now = self._clock()
            if now >= ready_at:
                client.set(
                    keys.ready_key(self._config.app, self._grain.name), os.getpid(), ex=READY_TTL_S
                )
                ready_at = now + READY_TTL_S / 3
            self._read_children(timeout_s=0.05)
            self._enforce_deadlines()
            self._reap(reporter)
        self._shutdown(reporter)

    def _on_term(self, signum: int, frame: object) -> None:
        self._stopping = True

    def _fill_pool(self) -> None:
        idle = sum(1 for c in self._children.values() if c.event is None)
        busy = len(self._children) - idle
        if idle >= 1 and busy and self._clock() - self._last_take < REFILL_DELAY_S:
            # A fork and the new child's set-up cost a few ms of CPU: on a 2-core host they
            # would compete with the instance that just took an event. While an idle child
            # is still waiting, refill once the busy ones are done (or after a short delay).
            return
        while idle < self._config.prefork and len(self._children) < self._config.max_concurrency:
            self._fork()
            idle += 1

    def _fork(self) -> None:
        read_fd, write_fd = os.pipe()
        parent_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            self._child(write_fd, parent_pid)
        os.close(write_fd)
        os.set_blocking(read_fd, False)
        self._children[pid] = _Child(pid, read_fd)

    def _read_children(self, timeout_s: float) -> None:
        fds = {c.fd: c for c in self._children.values()}
        if not fds:
            time.sleep(timeout_s)
            return
        readable, _, _ = select.select(list(fds), [], [], timeout_s)
        for fd in readable:
            child = fds[fd]
            with contextlib.suppress(BlockingIOError):
                chunk = os.read(fd, 1 << 16)
                child.buffer += chunk
            self._parse(child)

    def _parse(self, child: _Child) -> None:
        while len(child.buffer) >= _FRAME.size:
            kind, length = _FRAME.unpack_from(child.buffer)
            if len(child.buffer) < _FRAME.size + length:
                return
            body = bytes(child.buffer[_FRAME.size : _FRAME.size + length])
            del child.buffer[: _FRAME.size + length]
            if kind == TOOK:
                child.event = body
                self._last_take = self._clock()
            elif kind == TASK:
                task = json.loads(body)
                child.token = task["token"]
                child.timeout_s = float(task["timeout_s"])
                child.kill_at = self._clock() + child.timeout_s + self._config.grace_s

    def _enforce_deadlines(self) -> None:
        now = self._clock()
        for child in self._children.values():
            if child.kill_at is not None and now > child.kill_at and not child.killed_for_timeout:
                child.killed_for_timeout = True
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.pid, signal.SIGKILL)

    def _reap(self, reporter: EventHandler) -> None:
        while self._children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            child = self._children.pop(pid, None)
            if child is None:
                continue
            with contextlib.suppress(OSError):
                child.buffer += os.read(child.fd, 1 << 20)
            self._parse(child)
            os.close(child.fd)
            # Kill whatever the instance left behind in its process group.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            if status != 0 and child.event is not None:
                self._explain(reporter, child, status)

    def _explain(self, reporter: EventHandler, child: _Child, status: int) -> None:
        result: GrainResult = result_from_exit(
            self._grain.name, status, timed_out=child.killed_for_timeout, timeout_s=child.timeout_s
        )
        if child.token is None:
            result = GrainResult.failure(
                "States.Runtime",
                f"the instance of grain '{self._grain.name}' failed before running its task "
                f"({result.cause})",
            )
        _log(
            self._grain.name,
            "instance failed",
            pid=child.pid,
            error=result.error,
            cause=result.cause,
        )
        try:
            assert child.event is not None
            reporter.fail_task(child.event, child.token, result)
        except Exception:  # a background loop logs and keeps going
            traceback.print_exc()

    def _shutdown(self, reporter: EventHandler) -> None:
        for child in self._children.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGTERM if child.event else signal.SIGKILL)
        deadline = self._clock() + 5
        while self._children and self._clock() < deadline:
            self._reap(reporter)
            time.sleep(0.05)
        for pid in list(self._children):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)

    # -- child -----------------------------------------------------------------------------

    def _child(self, fd: int, parent_pid: int) -> NoReturn:
        code = 70
        try:
            prepare_child_process()
            # The instance has a process group of its own (so the deadline kill reaches
            # what it spawns), so a kill of the sandbox's group misses it: tie its life
            # to the worker's instead, or an orphan would take events nobody reports.
            _die_with_parent()
            if os.getppid() != parent_pid:
                os._exit(0)
            assert self._handler is not None
            handler = self._handler
            client = handler.client

            def send(kind: bytes, body: bytes) -> None:
                os.write(fd, _FRAME.pack(kind, len(body)) + body)

            # Open this child's connection (and log in) now, while no event waits. (Pre-
            # touching the codec's pages here as well cost 4 ms of CPU per child on this
            # kind of VM, more than it saved on the critical path; measured, then dropped.)
            client.ping()

            while True:
                item = cast(
                    "list[bytes] | None", client.brpop([self._queue], timeout=BRPOP_TIMEOUT_S)
                )
                if item is not None:
                    break
                if os.getppid() != parent_pid:
                    os._exit(0)
            raw = item[1]
            try:
                send(TOOK, raw)
            except BrokenPipeError:
                # The worker died between our BRPOP and now: hand the event back to the
                # front of the queue (BRPOP takes from the right) for the next instance.
                client.rpush(self._queue, raw)
                os._exit(0)
            handler.handle(
                raw,
                on_task=lambda token, timeout_s: send(
                    TASK, json.dumps({"token": token, "timeout_s": timeout_s}).encode()
                ),
            )
            code = 0
        except BaseException:  # nothing may escape a forked child
            with contextlib.suppress(BaseException):
                traceback.print_exc()
        finally:
            exit_child(code)


_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:
    """Have the kernel SIGKILL this process when its parent exits (Linux prctl)."""
    if _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def _log(grain: str, message: str, **fields: object) -> None:
    pairs = " ".join(f"{k}={v}" for k, v in fields.items())
    print(f"grain={grain} msg={message!r} {pairs}", file=sys.stderr, flush=True)
