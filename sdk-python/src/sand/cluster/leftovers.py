"""Every process of a state dir, wherever it ended up, and the sandbox cgroups it used.

A process belongs to a state dir when its command line names the dir (the services,
``unshare`` and the jail of a process sandbox, containerd's shims), it runs in a sandbox
cgroup of one of the dir's hosts (decision 0022: a grain worker whose agent died is found
there even after it was re-parented to pid 1, and its jailed command line names nothing),
or it descends from such a process (a container's processes descend from its shim).
``sand down`` kills them all. The test suites assert that none is left after them
(decision 0021), and also count a process whose working directory is inside the dir
(``by_cwd``: a report, never a reason to kill, since a user's shell may sit there).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

import psutil
from sand import contracts

_MOUNTINFO = Path("/proc/self/mountinfo")
_KILL_WAIT_S = 5.0


def hierarchy_roots(mountinfo: str | None = None) -> list[Path]:
    """The cgroup hierarchies that hold sandbox cgroups: the cgroup v2 mount when it offers
    cpu and memory, else the v1 cpu and memory hierarchies (as ``Cgroups.java`` decides)."""
    if mountinfo is None:
        try:
            mountinfo = _MOUNTINFO.read_text()
        except OSError:
            return []
    unified: list[Path] = []
    v1: dict[str, Path] = {}
    for line in mountinfo.splitlines():
        mount, sep, fs = line.partition(" - ")
        fields, kinds = mount.split(" "), fs.split(" ")
        if not sep or len(fields) < 5 or len(kinds) < 3:
            continue
        point = Path(fields[4])
        if kinds[0] == "cgroup2":
            unified.append(point)
        elif kinds[0] == "cgroup":
            for controller in ("cpu", "memory"):
                if controller in kinds[2].split(","):
                    v1[controller] = point
    for root in unified:
        with contextlib.suppress(OSError):
            if {"cpu", "memory"} <= set((root / "cgroup.controllers").read_text().split()):
                return [root]
    return list(dict.fromkeys(v1.values()))


def sandbox_cgroups(host_state_dirs: Iterable[Path], roots: list[Path] | None = None) -> list[Path]:
    """The parent cgroups (``sand-<hash>``) of these hosts that exist now."""
    roots = hierarchy_roots() if roots is None else roots
    names = [contracts.sandbox_cgroup(str(d)) for d in host_state_dirs]
    return [root / name for root in roots for name in names if (root / name).is_dir()]


def cgroup_pids(parents: Iterable[Path]) -> set[int]:
    """The pids in these cgroups and every cgroup below them."""
    pids: set[int] = set()
    for parent in parents:
        for procs in [parent / "cgroup.procs", *parent.rglob("*/cgroup.procs")]:
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(line) for line in procs.read_text().split())
    return pids


def names_dir(state_dir: Path) -> Callable[[str], bool]:
    """Whether a command-line argument names ``state_dir`` or a path below it: the dir as a
    whole path, not as the prefix of another one (``/x/test-state`` must not claim the
    processes of ``/x/test-state-gw1``, a cluster of its own beside it, nor those of
    ``/a/x/test-state``)."""
    pattern = re.compile(r"(?<![\w.-])" + re.escape(str(state_dir)) + r"(?![\w.-])")
    return lambda argument: pattern.search(argument) is not None


def processes_of(
    state_dir: Path, host_state_dirs: Iterable[Path], *, by_cwd: bool = False
) -> list[psutil.Process]:
    """Every live process of ``state_dir`` (see the module's rules), never this process
    nor one of its ancestors. ``host_state_dirs`` are its hosts' own dirs (their cgroups)."""
    marker = str(state_dir)
    names = names_dir(state_dir)
    spared = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    in_cgroups = cgroup_pids(sandbox_cgroups(host_state_dirs))
    found: dict[int, psutil.Process] = {}
    for process in psutil.process_iter(["cmdline", "cwd", "status"]):
        info = process.info
        if process.pid in spared or info["status"] == psutil.STATUS_ZOMBIE:
            continue
        named = any(names(part) for part in info.get("cmdline") or [])
        cwd = info.get("cwd") or ""
        inside = by_cwd and (cwd == marker or cwd.startswith(marker + "/"))
        if named or inside or process.pid in in_cgroups:
            found[process.pid] = process
    for process in list(found.values()):
        with contextlib.suppress(psutil.Error):
            for child in process.children(recursive=True):
                if child.pid not in spared:
                    found.setdefault(child.pid, child)
    return sorted(found.values(), key=lambda p: p.pid)


def describe(processes: Iterable[psutil.Process]) -> list[str]:
    """``pid: command line`` of each process, for messages."""
    lines = []
    for process in processes:
        try:
            lines.append(f"{process.pid}: {' '.join(process.cmdline()) or process.name()}")
        except psutil.Error:
            lines.append(f"{process.pid}: (gone)")
    return lines


def kill(processes: list[psutil.Process]) -> None:
    """SIGKILL ``processes`` and wait until they are gone (up to 5 s)."""
    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(processes, timeout=_KILL_WAIT_S)


def remove_cgroups(host_state_dirs: Iterable[Path]) -> list[Path]:
    """Kill what is left in these hosts' sandbox cgroups and remove them (children first).
    Returns the cgroups that could not be removed."""
    parents = sandbox_cgroups(host_state_dirs)
    kill([p for pid in cgroup_pids(parents) if (p := _process(pid)) is not None])
    failed = []
    for parent in parents:
        for cgroup in sorted(parent.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if cgroup.is_dir():
                with contextlib.suppress(OSError):
                    cgroup.rmdir()
        try:
            parent.rmdir()
        except OSError:
            failed.append(parent)
    return failed


def mounts_below(directory: Path, mountinfo: str | None = None) -> list[Path]:
    """The mount points strictly inside ``directory``, deepest first."""
    if mountinfo is None:
        try:
            mountinfo = _MOUNTINFO.read_text()
        except OSError:
            return []
    points = []
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) > 4:
            # mountinfo escapes space, tab, newline and backslash as octal (\040...)
            points.append(Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4])))
    inside = (p for p in points if directory in p.parents)
    return sorted(set(inside), key=lambda p: (-len(p.parts), str(p)))


def unmount_below(directory: Path, keep: Iterable[Path] = ()) -> list[Path]:
    """Detaches every mount point strictly inside ``directory`` but those at or below a path
    of ``keep``, deepest first: a dockerd killed rather than stopped leaves its containers'
    network namespaces mounted in its exec root, where they keep the state dir from being
    removed. Returns those that stayed."""
    kept = list(keep)
    stuck = []
    for point in mounts_below(directory):
        if any(k == point or k in point.parents for k in kept):
            continue
        done = subprocess.run(["umount", "-l", str(point)], check=False, capture_output=True)
        if done.returncode != 0:
            stuck.append(point)
    return stuck


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None
