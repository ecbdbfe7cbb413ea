"""The sandbox's memory limit as seen from inside it, to tell an OOM kill from other SIGKILLs.

A grain instance that the kernel kills for its sandbox's memory limit dies of SIGKILL, like
one killed by anybody else. The memory cgroup counts those kills (``oom_kill`` in
``memory.events`` on cgroup v2, in ``memory.oom_control`` on v1; Docker shows a container
its own cgroup there): a SIGKILL while the counter moved is the memory limit's doing.

The process backend has no cgroup of its own (no ``/sys`` in its jail); its limit is
``RLIMIT_AS`` per process, which a grain meets as a ``MemoryError``
(:func:`address_space_limit_mb` names it).
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
# cgroup v2 reports "no limit" as "max"; v1 as a huge number (page-rounded LONG_MAX)
_NO_LIMIT_BYTES = 1 << 60


@dataclass(frozen=True, slots=True)
class MemoryWatch:
    """The memory cgroup of this sandbox: its limit and where its OOM-kill count is."""

    limit_bytes: int
    counter: Path  # a file with an ``oom_kill N`` line

    @classmethod
    def find(cls, root: Path = CGROUP_ROOT) -> MemoryWatch | None:
        """The sandbox's memory cgroup (v2, else v1), or None when there is no limited one."""
        for limit_file, counter in (
            (root / "memory.max", root / "memory.events"),
            (root / "memory" / "memory.limit_in_bytes", root / "memory" / "memory.oom_control"),
        ):
            try:
                raw = limit_file.read_text().strip()
            except OSError:
                continue
            limit = _NO_LIMIT_BYTES if raw == "max" else int(raw)
            if limit < _NO_LIMIT_BYTES and _oom_kills(counter) is not None:
                return cls(limit_bytes=limit, counter=counter)
        return None

    @property
    def limit_mb(self) -> int:
        return self.limit_bytes // (1024 * 1024)

    def oom_kills(self) -> int:
        """How many processes the kernel killed for this limit so far (0 if unreadable)."""
        return _oom_kills(self.counter) or 0


def _oom_kills(path: Path) -> int | None:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        return None
    return None


def address_space_limit_mb() -> int | None:
    """This process's RLIMIT_AS in MiB (the process backend's memory limit), or None."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft // (1024 * 1024)


def memory_limit_cause(grain: str, limit_mb: int) -> str:
    """The cause of a grain failure at the sandbox's memory limit."""
    return (
        f"grain '{grain}' process was killed by the kernel's OOM killer: its sandbox reached "
        f"its memory limit of {limit_mb} MiB (the app's limits.memory_mb per grain, plus one "
        "share for bursts)"
    )
