"""A forked grain instance as the parent sees it, and how it ended.

:class:`Child` is the pool's record of one instance (:class:`sand.grain.pool.Pool`
updates it; callers only read), :class:`Ended` one that was reaped, with the explanation
of its end (:meth:`Ended.outcome`), and :class:`Turn` what one turn of the pool's
monitoring loop saw. Not thread-safe, as the pool.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sand.grain.exits import ExitCode, explain_exit
from sand.grain.limits import memory_limit_cause
from sand.grain.result import GrainError, GrainResult

# A child that closed its pipe is exiting: the pool retries its reap after this at first.
_SETTLE_FIRST_S = 0.001


@dataclass(slots=True, eq=False)
class Child:
    """A forked instance as its parent sees it. The pool updates it; callers only read."""

    pid: int
    fd: int  # the read end of its pipe
    tasks_fd: int | None  # the write end of its task pipe (None: it serves no tasks)
    grain: str
    started: float  # pool clock at the fork, or at the result of its last task
    wire_limit_bytes: int | None  # largest frame body accepted (None: no limit)
    timeout_s: float = 0.0
    kill_at: float | None = None  # deadline plus grace, once known
    taken: bytes | None = None  # the work its task came from (assign's ``taken``)
    taken_at: float | None = None
    token: str | None = None  # the task assigned to it
    result: GrainResult | None = None  # the body of its RESULT frame
    wrote: str | None = None  # the body of its WROTE frame
    timed_out: bool = False  # killed at kill_at
    oversize: bool = False  # sent a frame above wire_limit_bytes (and was killed)
    killed: bool = False
    eof: bool = False
    served: int = 0  # tasks it finished with a RESULT frame
    oom_kills_at_fork: int | None = None  # the sandbox's OOM-kill count then (MemoryWatch)
    memory_limit_mb: int | None = None  # set when the memory limit killed it
    adopted: bool = False  # forked by the pool's zygote: its status comes from there
    cpu_ms: float | None = None  # user + system CPU of its whole life, once reaped
    minflt: int | None = None  # its minor page faults, once reaped
    buffer: bytearray = field(default_factory=bytearray)
    settle_s: float = _SETTLE_FIRST_S

    @property
    def busy(self) -> bool:
        """Whether it has work: a task was assigned, or it has a deadline. Else it is idle."""
        return self.taken is not None or self.kill_at is not None


@dataclass(frozen=True, slots=True)
class Ended:
    """A child that was reaped, with its ``waitpid`` status and the pool clock then."""

    child: Child
    status: int
    at: float

    @property
    def clean(self) -> bool:
        """It exited by itself with ``ExitCode.OK``: its work returned."""
        child = self.child
        return self.status == ExitCode.OK and not child.timed_out and not child.oversize

    def outcome(self) -> GrainResult:
        """The result it delivered (RESULT frame), else why it ended without one.

        Timed from the fork to the reap. A clean exit without a result is a failure
        here too: call this for children expected to deliver, or that did not end clean.
        """
        child = self.child
        if child.oversize:
            result = GrainResult.failure(
                GrainError.DATA_LIMIT_EXCEEDED,
                f"grain '{child.grain}' sent more than {child.wire_limit_bytes} bytes of result",
            )
        elif child.memory_limit_mb is not None:
            result = GrainResult.failure(
                GrainError.RUNTIME, memory_limit_cause(child.grain, child.memory_limit_mb)
            )
        elif child.result is not None:
            result = child.result
        else:
            result = explain_exit(
                child.grain, self.status, timed_out=child.timed_out, timeout_s=child.timeout_s
            )
        return result.with_duration((self.at - child.started) * 1000)


@dataclass(frozen=True, slots=True)
class Turn:
    """What one turn of the monitoring loop saw (:meth:`Pool.turn`)."""

    ended: list[Ended]
    delivered: list[Child]  # children that delivered the result of their assigned task
    ready: list[int]  # the caller's ``fds`` that are readable
    forked: list[Child]  # instances the zygote forked on request_fork's request
    fork_failures: list[str]  # why requested forks failed
