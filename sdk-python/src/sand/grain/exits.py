"""What a forked grain instance's exit status means, as a failed :class:`GrainResult`.

The runner leaves a child only through ``os._exit`` with an :class:`ExitCode`;
any other status, or a signal, is the grain's own doing (``os._exit(3)``, a
segfault, the OOM killer) or the parent's deadline kill. :func:`explain_exit`
turns each of them into an error name and a cause a workflow can record.
"""

from __future__ import annotations

import os
import signal
from enum import IntEnum

from sand.grain.result import GrainError, GrainResult


class ExitCode(IntEnum):
    """The statuses the child runner (:func:`sand.grain.child.child_main`) exits with."""

    # The work returned: whatever the child had to deliver was delivered.
    OK = 0
    # The runner itself raised (not the grain: invoke turns the grain's failures into
    # results); the traceback is on the child's stderr. sysexits.h EX_SOFTWARE.
    RUNNER_FAILED = 70
    # The parent was gone before the child took any work; nobody waits for it.
    # sysexits.h EX_TEMPFAIL.
    PARENT_GONE = 75


def explain_exit(
    grain: str, status: int, *, timed_out: bool = False, timeout_s: float = 0.0
) -> GrainResult:
    """Explain a child that ended without delivering a result.

    ``status`` is as returned by ``waitpid``; ``timed_out`` says the parent killed
    the child's process group at its deadline (plus grace), which takes precedence
    over the status (then SIGKILL). Never raises.
    """
    if timed_out:
        return GrainResult.failure(
            GrainError.TIMEOUT,
            f"grain '{grain}' did not finish within its timeout of {timeout_s:g} s "
            "and its process group was killed",
        )
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return GrainResult.failure(
            GrainError.TASK_FAILED,
            f"grain '{grain}' process was killed by signal {name} ({signum})",
        )
    code = os.WEXITSTATUS(status)
    if code == ExitCode.OK:
        cause = f"grain '{grain}' process exited with status 0 without returning a result"
    elif code == ExitCode.RUNNER_FAILED:
        cause = (
            f"grain '{grain}' process exited with status {code} (RUNNER_FAILED: the runner "
            "around the grain failed; its traceback is in the logs)"
        )
    else:
        cause = f"grain '{grain}' process exited with status {code}"
    return GrainResult.failure(GrainError.TASK_FAILED, cause)
