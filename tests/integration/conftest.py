"""The suite's own cluster: real Redis, Kafka, Cassandra, dockerd, nginx, frontends
and host agent, started once per session in a private state dir on private ports
(so a cluster started by `make run` on the default ports is left alone)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest
from sand.cluster import leftovers
from sand.cluster.bootstrap import ensure_admin_token
from sand.cluster.config import ClusterConfig, load_config
from sand.cluster.image import ensure_base_image
from sand.cluster.supervisor import Supervisor

# Private ports: the defaults + 10000, + $SAND_TEST_PORT_OFFSET (say 500) so that a second
# checkout can run the suite at the same time on this machine (with its own SAND_TEST_STATE).
PORT_OFFSET = int(os.environ.get("SAND_TEST_PORT_OFFSET", "0"))
_TEST_PORTS: dict[str, dict[str, Any]] = {
    "kafka": {"port": 29092, "controller_port": 29093},
    "cassandra": {"cql_port": 29042, "storage_port": 27000, "jmx_port": 27199},
    "frontend": {"ports": [28081, 28082]},
    "host_agent": {"port": 28090},
    "nginx": {"port": 28080},
}


def shifted(ports: dict[str, dict[str, Any]], offset: int) -> dict[str, dict[str, Any]]:
    """Every port of ``ports`` plus ``offset``."""
    return {
        section: {
            key: [p + offset for p in value] if isinstance(value, list) else value + offset
            for key, value in values.items()
        }
        for section, values in ports.items()
    }


# Under pytest-xdist (`make integration`: several workers, decision 0037) each worker that
# runs a module needing the suite's cluster starts one of its own: gw0 on the ports above,
# gw1 on them + 300, and so on, in its own state dir. The other clusters (multihost, faults,
# placement...) need no shift: each is used by one module or directory, which xdist keeps on
# one worker (tests/conftest.py groups them).
WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
WORKER_OFFSET = 300 * WORKER
TEST_PORTS = shifted(_TEST_PORTS, PORT_OFFSET + WORKER_OFFSET)
# The host agents export the spans of traced executions here; tests/integration/
# test_observability.py listens on it (an OTLP/HTTP receiver of its own) while it runs.
OTLP_PORT = 24318 + PORT_OFFSET + WORKER_OFFSET
TEST_PORTS["tracing"] = {"otlp_endpoint": f"http://127.0.0.1:{OTLP_PORT}/v1/traces"}


def test_state_dir() -> Path:
    default = Path(__file__).resolve().parents[2] / "build" / "test-state"
    base = Path(os.environ.get("SAND_TEST_STATE", default))
    return base if WORKER == 0 else base.with_name(f"{base.name}-gw{WORKER}")


# How long a test cluster's service may take to become ready: more than `sand up`'s 120 s, as
# one starts while other workers load the machine (make integration's parallel phase)
READY_TIMEOUT_S = 300

# Test clusters live minutes: their agents, Kafka and Cassandra compile with C1 only
# (`cluster.quick_jit`), which spares the C2 compiler threads' share of their CPU in a
# stack's first minutes, about half (decision 0037). Behaviour is the same; `make bench`
# and `make run` keep C2.
QUICK_JIT = True

# Every state dir a cluster of this session used (make_config, multihost_config): none may
# keep a process once the session is over (decision 0021; the no_leftovers of tests/conftest.py).
USED_STATE_DIRS: set[Path] = set()


def make_config(state_dir: Path, **sections: dict[str, object]) -> ClusterConfig:
    overrides: dict[str, dict[str, object]] = {k: dict(v) for k, v in TEST_PORTS.items()}
    overrides.setdefault("cluster", {})["state_dir"] = str(state_dir)
    overrides["cluster"].setdefault("ready_timeout_s", READY_TIMEOUT_S)
    overrides["cluster"].setdefault("quick_jit", QUICK_JIT)
    for section, values in sections.items():
        overrides.setdefault(section, {}).update(values)
    config = load_config(env={}, overrides=overrides)
    USED_STATE_DIRS.add(config.state_dir)
    return config


def config_file_of(config: ClusterConfig) -> Path:
    """A TOML file that ``sand --config`` reads as ``config`` (one made by ``make_config``
    without sections of its own): the suite's ports and state dir, beside the state dir."""
    cluster = {
        "state_dir": str(config.state_dir),
        "ready_timeout_s": config.ready_timeout_s,
        "quick_jit": config.quick_jit,
    }
    sections = {**TEST_PORTS, "cluster": cluster}
    lines = []
    for section, values in sections.items():
        lines.append(f"[{section}]")
        # JSON strings, numbers and lists of numbers are valid TOML
        lines += [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    path = config.state_dir.parent / f"{config.state_dir.name}.toml"
    path.write_text("\n".join(lines) + "\n")
    assert load_config(path, env={}) == config, "the file must describe the same cluster"
    return path


def our_processes(config: ClusterConfig) -> list[psutil.Process]:
    """Every live process of the cluster's state dir: its command line or working directory
    names the dir, it runs in a sandbox cgroup of one of its hosts, or it descends from
    such a process (``sand.cluster.leftovers``)."""
    return leftovers.processes_of(config.state_dir, [p.state_dir for p in config.host_plans])


def processes_left(state_dirs: set[Path]) -> list[psutil.Process]:
    """The live processes of any of ``state_dirs`` (each with its hosts' dirs)."""
    found: dict[int, psutil.Process] = {}
    for state_dir in sorted(state_dirs):
        hosts = [state_dir, *sorted((state_dir / "hosts").glob("*"))]
        for process in leftovers.processes_of(state_dir, hosts, by_cwd=True):
            found[process.pid] = process
    return list(found.values())


def assert_no_leftovers(state_dirs: set[Path]) -> None:
    """Fails, listing each pid and command line, when a process of ``state_dirs`` is left."""
    left = processes_left(state_dirs)
    assert not left, (
        f"{len(left)} process(es) of the suite's state dirs "
        f"({', '.join(map(str, sorted(state_dirs)))}) outlived the session:\n  "
        + "\n  ".join(leftovers.describe(left))
    )


@pytest.fixture(scope="session")
def cluster_config() -> ClusterConfig:
    return make_config(test_state_dir())


@contextmanager
def one_start_at_a_time() -> Iterator[None]:
    """Held while a test cluster starts (or restarts whole): under pytest-xdist several
    workers start clusters, and three Cassandras and Kafkas starting at once on two cores
    take longer than their start-up limits (an agent gives up on Cassandra after 60 s).
    One at a time, each is up in well under a minute and its worker gets going; a flock,
    so a worker that dies lets go of it."""
    path = Path(__file__).resolve().parents[2] / "build" / ".test-cluster-start.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def clear_state(state_dir: Path) -> None:
    """Empties the state dir of a test cluster that is not running, but for Docker's image
    store (``data/docker``, the base image takes a while to build): each session starts from
    no topics, tables or jar copies, as on a fresh clone. A dir that is left as it was
    otherwise piles up the topics of every earlier run, and Kafka takes minutes to load them
    (971 partitions: over 120 s). One that still has processes is left alone (the
    supervisor reports them)."""
    if not state_dir.is_dir() or processes_left({state_dir}):
        return
    keep = {state_dir / "data" / "docker", *state_dir.glob("hosts/*/data/docker")}
    # a cluster killed rather than stopped (a session interrupted) can leave dockerd's network
    # namespaces mounted in its exec root: "busy" to rmtree until unmounted
    leftovers.unmount_below(state_dir, keep)
    _remove_all_but(state_dir, keep)


def _remove_all_but(directory: Path, keep: set[Path]) -> None:
    for child in directory.iterdir():
        if child in keep:
            continue
        if any(child in k.parents for k in keep):
            _remove_all_but(child, keep)
        elif child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


@pytest.fixture(scope="session")
def cluster(cluster_config: ClusterConfig) -> Iterator[Supervisor]:
    """A running, all-healthy cluster for the whole session, with its admin token
    (``sand.cluster.bootstrap.admin_token(cluster_config)``); stopped at the end."""
    clear_state(cluster_config.state_dir)
    supervisor = Supervisor(cluster_config, after_ready={"dockerd": lambda: _image(cluster_config)})
    with one_start_at_a_time():
        supervisor.up()
    ensure_admin_token(cluster_config)  # as `sand up` does
    yield supervisor
    supervisor.down()


def _image(config: ClusterConfig) -> None:
    ensure_base_image(config)
