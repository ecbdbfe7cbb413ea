"""sand.cluster.leftovers: which processes belong to a state dir (decision 0021)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from sand import contracts
from sand.cluster import leftovers

V1 = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / {root}/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / {root}/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / {root}/unified rw,relatime - cgroup2 cgroup2 rw
"""


def test_hierarchyRoots_v1WhenV2LacksCpuAndMemory(tmp_path: Path) -> None:
    """As Cgroups.java decides: v2 only when it offers cpu and memory, else v1's two."""
    (tmp_path / "unified").mkdir()
    (tmp_path / "unified" / "cgroup.controllers").write_text("hugetlb\n")
    assert leftovers.hierarchy_roots(V1.format(root=tmp_path)) == [
        tmp_path / "cpu",
        tmp_path / "memory",
    ]
    (tmp_path / "unified" / "cgroup.controllers").write_text("cpu memory pids\n")
    assert leftovers.hierarchy_roots(V1.format(root=tmp_path)) == [tmp_path / "unified"]


def test_sandboxCgroups_andTheirPids(tmp_path: Path) -> None:
    """The hosts' parents that exist, and the pids of every cgroup below them."""
    host = Path("/st/hosts/host-1")
    parent = tmp_path / "cpu" / contracts.sandbox_cgroup(str(host))
    (parent / "proc-a-1").mkdir(parents=True)
    (parent / "proc-a-1" / "cgroup.procs").write_text("12\n34\n")
    (parent / "cgroup.procs").write_text("")
    roots = [tmp_path / "cpu", tmp_path / "memory"]

    found = leftovers.sandbox_cgroups([host, Path("/st/hosts/host-2")], roots)

    assert found == [parent]
    assert leftovers.cgroup_pids(found) == {12, 34}


@pytest.mark.timeout(10)
def test_processesOf_namedByCommandLine_withDescendants_neverItself(tmp_path: Path) -> None:
    """A process whose command line names the state dir is one, and so is its child; this
    process (and its ancestors) never are, though the test's own command line may name it."""
    state = tmp_path / "state"
    state.mkdir()
    script = "import subprocess, sys, time; subprocess.Popen(['sleep', '30']); time.sleep(30)"
    parent = subprocess.Popen([sys.executable, "-c", script, str(state)])
    try:
        found: list[int] = []
        for _ in range(100):  # until the child's sleep runs
            found = [p.pid for p in leftovers.processes_of(state, [state])]
            if len(found) == 2:
                break
            time.sleep(0.05)
        assert parent.pid in found
        assert len(found) == 2  # the parent and its sleep
        other = tmp_path / "other"
        assert leftovers.processes_of(other, [other]) == []
    finally:
        for process in leftovers.processes_of(state, [state]):
            process.kill()
        parent.wait()


def test_namesDir_isTheWholePath_notThePrefixOfAnother() -> None:
    """Two clusters whose state dirs share a prefix (the suite's workers: test-state and
    test-state-gw1) each claim only their own processes."""
    names = leftovers.names_dir(Path("/x/test-state"))
    for argument in (
        "/x/test-state",
        "/x/test-state/conf/kafka.properties",
        "-Dcassandra.config=file:///x/test-state/conf/cassandra.yaml",
        "/x/test-state/conf/cassandra:/opt/lib/*",
        "--dir=/x/test-state,other",
    ):
        assert names(argument), argument
    for argument in (
        "/x/test-state-gw1/conf/kafka",
        "/x/test-states",
        "/x/test-state.1",
        "/a/x/test-state/conf/kafka",
    ):
        assert not names(argument), argument


def test_mountsBelow_strictlyInside_deepestFirst_octalEscapesRead() -> None:
    """What `sand down` detaches in a killed dockerd's exec root: the mounts inside the
    directory (not the directory itself, not a sibling whose name it prefixes), deepest
    first, with mountinfo's octal escapes read back."""
    root = Path("/s/run/docker-exec")
    mountinfo = "\n".join(
        f"{n} 1 0:{n} / {point} rw - nsfs nsfs rw"
        for n, point in enumerate(
            [
                "/",
                "/s/run/docker-exec",
                "/s/run/docker-exec/netns/abc",
                "/s/run/docker-exec/netns/my\\040box",
                "/s/run/docker-exec/netns/abc/deeper",
                "/s/run/docker-exec-2/netns/x",
            ]
        )
    )
    assert leftovers.mounts_below(root, mountinfo) == [
        Path("/s/run/docker-exec/netns/abc/deeper"),
        Path("/s/run/docker-exec/netns/abc"),
        Path("/s/run/docker-exec/netns/my box"),
    ]
