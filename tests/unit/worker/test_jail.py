"""The process backend's jail: what it binds, in which order, and how it drops to the app's user.
(Building the jail needs root and namespaces: the integration attack tests run it for real.)"""

from __future__ import annotations

import json
import sys

import pytest
from sand_worker.jail import (
    ROOT_CANDIDATES,
    Bind,
    JailError,
    JailSpec,
    new_root_for,
    ordered,
    setpriv_argv,
    system_binds,
)


def _spec(uid: int = 2_000_000_001) -> str:
    return json.dumps(
        {
            "uid": uid,
            "gid": uid,
            "tmp_size_mb": 16,
            "memory_mb": 300,
            "pids_limit": 40,
            "mounts": [{"host": "/st/apps/a", "sandbox": "/st/apps/a", "read_only": True}],
        }
    )


def test_parse_readsUserLimitsAndMounts() -> None:
    """The agent's JSON becomes a typed spec."""
    spec = JailSpec.parse(_spec())

    assert (spec.uid, spec.gid, spec.tmp_size_mb, spec.memory_mb, spec.pids_limit) == (
        2_000_000_001,
        2_000_000_001,
        16,
        300,
        40,
    )
    assert spec.binds == (Bind("/st/apps/a", "/st/apps/a", True),)


def test_parse_root_isRefused() -> None:
    """The jail never runs a sandbox as root."""
    with pytest.raises(JailError, match="must not be root"):
        JailSpec.parse(_spec(uid=0))


def test_ordered_parentsBeforeChildren_duplicatesOnce() -> None:
    """A bind inside another is made after it (else the outer one would hide it)."""
    binds = [Bind("/w/a/b", "/w/a/b", True), Bind("/w/a", "/w/a", True), Bind("/x", "/w/a", True)]

    assert [b.sandbox for b in ordered(binds)] == ["/w/a", "/w/a/b"]


def test_systemBinds_holdThisPythonAndTheSystemReadOnly() -> None:
    """The jail's own interpreter (installation and venv) and /usr are bound read-only."""
    binds = system_binds()

    assert all(b.read_only and b.host == b.sandbox for b in binds)
    assert {sys.base_prefix, "/usr"} <= {b.host for b in binds}


def test_setprivArgv_dropsEverything() -> None:
    """The command runs as the app's uid and gid, with no groups, no capabilities at all and
    no_new_privs."""
    argv = setpriv_argv(JailSpec.parse(_spec()), ["python3", "-m", "sand_worker"])

    assert argv[0] == "/usr/bin/setpriv"
    assert {
        "--reuid=2000000001",
        "--regid=2000000001",
        "--clear-groups",
        "--no-new-privs",
        "--bounding-set=-all",
        "--inh-caps=-all",
    } <= set(argv)
    assert argv[-4:] == ["--", "python3", "-m", "sand_worker"]


def test_newRoot_isNeverBuiltOverABoundPath(monkeypatch: pytest.MonkeyPatch) -> None:
    """SAND installed under /tmp (or /mnt...) is bound into the sandbox: the new root's tmpfs
    must not be mounted over it, so the first candidate holding no bound path is chosen."""
    monkeypatch.setattr("sand_worker.jail.os.path.isdir", lambda path: True)
    code = Bind("/mnt/sand/grain-worker/src", "/mnt/sand/grain-worker/src", True)
    assert new_root_for([code]) == "/media"
    app = Bind("/tmp/ci/apps/a", "/tmp/ci/apps/a", True)
    assert new_root_for([app]) == "/mnt"
    everywhere = [Bind(d + "/x", d + "/x", True) for d in ROOT_CANDIDATES]
    with pytest.raises(JailError, match="no directory to build the sandbox's root on"):
        new_root_for(everywhere)
