"""Helpers for the tests of the fork model: run a pool's loop, tell that a process is gone."""

from __future__ import annotations

import time

import psutil
from sand.grain.pool import Ended, Pool


def until_ended(pool: Pool, within_s: float = 5.0) -> list[Ended]:
    """Run the monitoring loop until some child ended; fail the test after ``within_s``."""
    give_up = time.monotonic() + within_s
    while time.monotonic() < give_up:
        ended = pool.wait(0.1)
        if ended:
            return ended
    raise AssertionError(f"no child ended within {within_s} s")


def gone(pid: int, within_s: float = 3.0) -> bool:
    """The process no longer runs (absent, or a zombie waiting for init)."""
    give_up = time.monotonic() + within_s
    while time.monotonic() < give_up:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.02)
    return False
