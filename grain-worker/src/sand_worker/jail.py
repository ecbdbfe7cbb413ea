"""The process backend's jail: a file system, a network and a user of the sandbox's own.

The host agent (root) runs ``unshare --mount --net --pid --ipc --uts --fork`` and, inside
those new namespaces, ``python -I -S jail.py SPEC -- COMMAND...``. This script, still root, first
moves itself into the sandbox's cgroups (CPU weight and quota, memory limit: decision 0022),
so that everything it starts, tenant code included, is inside them. Then it builds a
new root file system on a small tmpfs holding only what a grain worker needs, each part
bound read-only, nosuid and nodev at its host path:

* the system (``/usr``, ``/etc``, the ``/bin``-style links) and the Python the agent runs
  (its installation and its virtual environment),
* the mounts of the sandbox's spec: SAND's code, the app's directory, Redis's socket dir,
* ``/dev`` with the harmless nodes only, a fresh ``/proc`` of the new pid namespace,
  and a writable ``/tmp`` (tmpfs, ``tmp_size_mb``, nosuid, nodev),
* the sandbox's own memory cgroup, read-only, where a cgroup namespace would show it
  (``/sys/fs/cgroup`` on v2, ``/sys/fs/cgroup/memory`` on v1): the grain worker reads its
  limit and OOM-kill count there to report a memory-limit kill as such,

then pivots into it and drops the host's tree entirely: the state dir with its secrets,
other apps' files, the host's ``/tmp`` and home directories do not exist inside. It sets
the limits the process backend has (``RLIMIT_NPROC``: processes of the app's uid;
``RLIMIT_AS``: each process's address space; no core files) and finally execs
``setpriv`` to become the app's unprivileged uid and gid, with no supplementary groups,
an empty capability bounding set and ``no_new_privs``, which execs COMMAND.

It runs with ``-I -S`` (no PYTHONPATH, no site) and imports the standard library only:
as root it must never import a module a tenant could have put on the path. Linux only.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import platform
import resource
import sys
from dataclasses import dataclass
from pathlib import Path

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MNT_DETACH = 0x2
# pivot_root has no glibc wrapper
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}

# Bound from the host when present; on merged-/usr systems the top-level ones are links.
SYSTEM_DIRS = ("/usr", "/etc")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
DEVICES = ("null", "zero", "full", "random", "urandom")
DEV_LINKS = (
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
)
SETPRIV = "/usr/bin/setpriv"
CGROUP_ROOT = "/sys/fs/cgroup"


class JailError(Exception):
    """The jail could not be built; the message names the step and the path."""


@dataclass(frozen=True, slots=True)
class Bind:
    host: str
    sandbox: str
    read_only: bool


@dataclass(frozen=True, slots=True)
class JailSpec:
    """What the agent asks for (one JSON argument, see ``ProcessSandboxRuntime``)."""

    uid: int
    gid: int
    tmp_size_mb: int
    memory_mb: int
    pids_limit: int
    binds: tuple[Bind, ...]
    # the sandbox's cgroup in each hierarchy (decision 0022), entered before anything runs
    cgroups: tuple[str, ...] = ()
    memory_cgroup: str | None = None
    cgroup_version: int = 2

    @classmethod
    def parse(cls, text: str) -> JailSpec:
        raw = json.loads(text)
        spec = cls(
            uid=int(raw["uid"]),
            gid=int(raw["gid"]),
            tmp_size_mb=int(raw["tmp_size_mb"]),
            memory_mb=int(raw["memory_mb"]),
            pids_limit=int(raw["pids_limit"]),
            binds=tuple(
                Bind(str(m["host"]), str(m["sandbox"]), bool(m["read_only"])) for m in raw["mounts"]
            ),
            cgroups=tuple(str(c) for c in raw.get("cgroups", ())),
            memory_cgroup=raw.get("memory_cgroup"),
            cgroup_version=int(raw.get("cgroup_version", 2)),
        )
        if spec.uid <= 0 or spec.gid <= 0:
            raise JailError(f"the sandbox user must not be root, got {spec.uid}:{spec.gid}")
        return spec


def system_binds() -> list[Bind]:
    """The system and this Python (installation and venv), read-only at their host paths."""
    paths = [p for p in SYSTEM_DIRS if os.path.isdir(p)]
    paths += [sys.base_prefix, sys.prefix]
    # run with -S, Python does not read pyvenv.cfg into sys.prefix: find the venv by its file
    venv = Path(sys.executable).parent.parent
    if (venv / "pyvenv.cfg").is_file():
        paths.append(str(venv))
    return [Bind(p, p, True) for p in dict.fromkeys(paths)]


def cgroup_binds(spec: JailSpec) -> list[Bind]:
    """The sandbox's memory cgroup, read-only where the grain worker looks for its limit
    (``sand.grain.limits.MemoryWatch``)."""
    if spec.memory_cgroup is None:
        return []
    inside = CGROUP_ROOT if spec.cgroup_version == 2 else CGROUP_ROOT + "/memory"
    return [Bind(spec.memory_cgroup, inside, True)]


def enter_cgroups(spec: JailSpec) -> None:
    """Move this process (and so all it will start) into the sandbox's cgroups. Writing 0
    to ``cgroup.procs`` moves the writer, whatever its pid namespace calls it."""
    for cgroup in spec.cgroups:
        procs = os.path.join(cgroup, "cgroup.procs")
        try:
            with open(procs, "w") as file:
                file.write("0")
        except OSError as exc:
            raise JailError(f"cannot enter cgroup {cgroup}: {exc}") from exc


def ordered(binds: list[Bind]) -> list[Bind]:
    """Parents before children, so that no bind hides one made before it."""
    unique = {b.sandbox: b for b in binds}
    return sorted(unique.values(), key=lambda b: (b.sandbox.count("/"), b.sandbox))


class _Mounts:
    def __init__(self) -> None:
        self._libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)

    def mount(self, source: str, target: str, fstype: str, flags: int, data: str = "") -> None:
        result = self._libc.mount(
            source.encode(), target.encode(), fstype.encode(), flags, data.encode() or None
        )
        if result != 0:
            errno = ctypes.get_errno()
            raise JailError(f"mount {source} on {target} ({fstype}): {os.strerror(errno)}")

    def umount(self, target: str) -> None:
        if self._libc.umount2(target.encode(), MNT_DETACH) != 0:
            raise JailError(f"umount {target}: {os.strerror(ctypes.get_errno())}")

    def pivot_root(self, new_root: str, put_old: str) -> None:
        number = SYS_PIVOT_ROOT.get(platform.machine())
        if number is None:
            raise JailError(f"pivot_root: unsupported machine {platform.machine()}")
        if self._libc.syscall(number, new_root.encode(), put_old.encode()) != 0:
            raise JailError(f"pivot_root {new_root}: {os.strerror(ctypes.get_errno())}")


# Where the new root is built: the first of these that exists and holds none of the paths
# bound into the sandbox (the tmpfs mounted on it hides its host content from this mount
# namespace, so SAND installed under /tmp, say, must not be built over).
ROOT_CANDIDATES = ("/mnt", "/media", "/srv", "/opt", "/tmp", "/run")


def new_root_for(binds: list[Bind]) -> str:
    """A directory to build the new root on that is no ancestor of a bound host path."""
    for candidate in ROOT_CANDIDATES:
        if os.path.isdir(candidate) and not any(
            b.host == candidate or b.host.startswith(candidate + "/") for b in binds
        ):
            return candidate
    raise JailError(
        "no directory to build the sandbox's root on: each of "
        + ", ".join(ROOT_CANDIDATES)
        + " is missing or holds a path bound into the sandbox"
    )


def build(spec: JailSpec, new_root: str | None = None) -> None:
    """Build the new root and pivot into it. The caller is root in fresh namespaces.

    ``new_root`` is an existing directory of the (private) mount namespace that holds no
    bound path (default: :func:`new_root_for`): the tmpfs mounted on it hides the host's
    content there from this namespace only."""
    binds = ordered(system_binds() + list(spec.binds) + cgroup_binds(spec))
    new_root = new_root or new_root_for(binds)
    m = _Mounts()
    m.mount("sand-jail", new_root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    root = Path(new_root)
    # The sandbox's own /tmp first: a bound path under /tmp (SAND installed there) gets its
    # mount point inside it rather than being hidden by it.
    (root / "tmp").mkdir()
    m.mount(
        "sand-tmp",
        str(root / "tmp"),
        "tmpfs",
        MS_NOSUID | MS_NODEV,
        f"mode=1777,size={spec.tmp_size_mb}m",
    )
    read_only: list[str] = []
    for bind in binds:
        target = root / bind.sandbox.lstrip("/")
        if os.path.isdir(bind.host):
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()
        m.mount(bind.host, str(target), "", MS_BIND | MS_REC)
        if bind.read_only:
            read_only.append(str(target))
    # Read-only once every bind exists: a later bind may need a mount point inside an earlier one.
    for path in read_only:
        m.mount("", path, "", MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    for link in SYSTEM_LINKS:
        if os.path.islink(link):
            (root / link.lstrip("/")).symlink_to(os.readlink(link))
    dev = root / "dev"
    dev.mkdir()
    m.mount("sand-dev", str(dev), "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k")
    for device in DEVICES:
        (dev / device).touch()
        m.mount(f"/dev/{device}", str(dev / device), "", MS_BIND)
    for name, link in DEV_LINKS:
        (dev / name).symlink_to(link)
    m.mount("", str(dev), "", MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
    (root / "proc").mkdir()
    m.mount("proc", str(root / "proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    old = root / ".old-root"
    old.mkdir()
    os.chdir(root)
    m.pivot_root(".", ".old-root")
    os.chdir("/")
    m.umount("/.old-root")
    os.rmdir("/.old-root")
    m.mount("", "/", "", MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def limit(spec: JailSpec) -> None:
    """The limits the cgroups do not set: RLIMIT_NPROC counts every process of the app's
    uid, so it is the sandbox's pids limit; RLIMIT_AS caps each process's address space at
    the sandbox's memory limit (a grain that exceeds it alone gets a MemoryError rather
    than the cgroup's OOM kill); no core files."""
    resource.setrlimit(resource.RLIMIT_NPROC, (spec.pids_limit, spec.pids_limit))
    size = spec.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (size, size))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def setpriv_argv(spec: JailSpec, command: list[str]) -> list[str]:
    """``setpriv`` becoming the app's user with no privileges left, then ``command``."""
    return [
        SETPRIV,
        f"--reuid={spec.uid}",
        f"--regid={spec.gid}",
        "--clear-groups",
        "--no-new-privs",
        "--bounding-set=-all",
        "--inh-caps=-all",
        "--",
        *command,
    ]


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: jail.py SPEC_JSON -- COMMAND...", file=sys.stderr)
        return 2
    try:
        spec = JailSpec.parse(argv[1])
        enter_cgroups(spec)
        build(spec)
        limit(spec)
    except (JailError, OSError, ValueError, KeyError) as exc:
        print(f"sand-jail: cannot build the sandbox: {exc}", file=sys.stderr, flush=True)
        return 1
    command = setpriv_argv(spec, argv[3:])
    os.execv(command[0], command)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
