"""The child side of the fork model: what a freshly forked grain instance does first and last.

:meth:`sand.grain.pool.Pool.fork` calls :func:`child_main` in the child right
after ``os.fork()``. It makes the process an instance (:func:`prepare_child_process`:
own process group, default signals, no stdin, optionally tied to the parent's
life), runs the caller's work with a :class:`~sand.grain.channel.Channel` to the
parent, and leaves through ``os._exit`` with an :class:`~sand.grain.exits.ExitCode`
— never back into the parent's code, so no atexit handler or finally block of
the parent runs twice.

The work decides what the instance does: the emulator's child runs one known
invocation and delivers its result through the channel
(:func:`sand.grain.runner.fork_invocation`); a grain worker's child waits for
the tasks its parent assigns (:meth:`sand.grain.channel.Channel.next_task`), runs
each, and delivers its result.
"""

from __future__ import annotations

import _signal
import contextlib
import functools
import os
import signal
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from sand.grain.channel import Channel, ParentGone
from sand.grain.exits import ExitCode

Work = Callable[[Channel], None]

_PR_SET_PDEATHSIG = 1
# Plain ints for _signal: signal.signal's enum conversions are Python code that every fresh
# instance would run (and copy the pages of).
_CHILD_DEFAULT_SIGNALS = tuple(
    int(s)
    for s in (
        signal.SIGINT,
        signal.SIGTERM,
        signal.SIGHUP,
        signal.SIGQUIT,
        signal.SIGUSR1,
        signal.SIGUSR2,
        signal.SIGALRM,
        signal.SIGCHLD,
    )
)
_SIG_DFL = int(signal.SIG_DFL)


@dataclass(frozen=True, slots=True)
class ChildSetup:
    """How a pool prepares each child it forks."""

    # Send a grain's prints to stderr, for a parent whose stdout carries results.
    stdout_to_stderr: bool = False
    # Have the kernel SIGKILL the child when the parent exits (Linux PR_SET_PDEATHSIG).
    # A child leads its own process group, so a kill of the parent's group misses it:
    # without this an orphan could go on taking events that nobody reports.
    die_with_parent: bool = False
    # Raise the child's /proc/self/oom_score_adj to this (None: leave it). In a sandbox at
    # its memory limit the kernel then kills instances (and what they fork) before the
    # grain worker or the sandbox's main process, whatever their sizes (decision 0022).
    # Raising it needs no privilege; nothing the child starts can lower it again.
    oom_score_adj: int | None = None


def child_main(
    work: Work, setup: ChildSetup, *, fd: int, parent_pid: int, tasks_fd: int | None = None
) -> NoReturn:
    """The whole life of a forked instance; call it in the child right after ``os.fork()``.

    ``fd`` is the write end of the pipe to the parent, ``tasks_fd`` the read end of the
    pipe of tasks from it (a child forked to serve tasks). Exits with ``ExitCode.OK``
    once ``work`` returned, ``PARENT_GONE`` if it raised :class:`ParentGone` (or
    the parent was already gone at start), ``RUNNER_FAILED`` for anything else
    (traceback to stderr).
    """
    code = ExitCode.RUNNER_FAILED
    try:
        prepare_child_process(setup)
        channel = Channel(fd, parent_pid, tasks_fd)
        # The parent may have died before the prctl took effect.
        if setup.die_with_parent and channel.parent_gone():
            raise ParentGone(f"parent {parent_pid} exited before the child started")
        work(channel)
        code = ExitCode.OK
    except ParentGone:
        code = ExitCode.PARENT_GONE
    except BaseException:  # nothing may escape a forked child
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        exit_child(code)


def prepare_child_process(setup: ChildSetup) -> None:
    """Make the current (freshly forked) process a grain instance.

    Own process group (the parent kills it as a whole, grandchildren included),
    default signal dispositions (the parent's handlers are meaningless here), no
    stdin, and the options of ``setup``. SIGPIPE stays ignored, as in any Python
    process, so a closed pipe is an exception rather than a silent death.
    """
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    for signum in _CHILD_DEFAULT_SIGNALS:
        _signal.signal(signum, _SIG_DFL)
    with contextlib.suppress(ValueError):
        _signal.set_wakeup_fd(-1)
    if setup.die_with_parent:
        die_with_parent()
    if setup.oom_score_adj is not None:
        # os-level: an open() would build a text-file stack for three bytes
        adj = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        try:
            os.write(adj, str(setup.oom_score_adj).encode())
        finally:
            os.close(adj)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    if setup.stdout_to_stderr:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os.dup2(2, 1)  # C extensions and subprocesses write to fd 1
        sys.stdout = sys.stderr  # print() writes to the sys.stdout object, whatever its fd


def die_with_parent() -> None:
    """Have the kernel SIGKILL this process when its parent exits; raises OSError if not."""
    if _prctl()(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        import ctypes

        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def prepare_parent(setup: ChildSetup) -> None:
    """Load in the parent, once, what children of ``setup`` need, so no child pays for it."""
    if setup.die_with_parent:
        _prctl()


@functools.cache
def _prctl() -> Callable[..., int]:
    # ctypes is loaded on first use, so that importing the SDK (the CLI, the emulator)
    # does not pay for it.
    import ctypes

    prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    return prctl


def exit_child(code: int) -> NoReturn:
    """Leave a forked child: flush what it printed, then ``os._exit`` (never the parent's
    atexit handlers or finally blocks)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    os._exit(code)
