"""Shared pieces of the peer benchmarks: private infrastructure, the stand-in grain context
and the image pipeline's data flow in plain Python.

Everything here must import cheaply and without the peers' libraries: worker processes of
every peer import this module.
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PIPELINE_DIR = REPO / "examples" / "image-pipeline"
GRAINS = ("extract_metadata", "transform", "tag", "thumbnail")
START_TIMEOUT_S = 60.0
RESULT_TIMEOUT_S = 60.0
WARMUP = 20
REDIS_SERVER = "/usr/bin/redis-server"
PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


class PeerStartError(RuntimeError):
    """A peer's infrastructure did not come up in time."""


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile, the same definition as bench/invocation.py."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def worker_env() -> dict[str, str]:
    """Environment of worker subprocesses: they import `bench.peers.*` from the repository."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def wait_until(peer: str, what: str, ready: Callable[[], bool], timeout_s: float) -> None:
    """Poll `ready` until it is true; raise PeerStartError naming the peer otherwise."""
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except PeerStartError:
            raise  # a definite failure (a worker exited): waiting longer will not help
        except Exception as exc:  # not up yet: keep the cause for the error message
            last = exc
        time.sleep(0.05)
    raise PeerStartError(f"{peer}: {what} not ready within {timeout_s:.0f} s (last error: {last})")


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process started with its own session, and all its children (forked pools)."""
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    # Children may outlive a leader that exited: kill whatever is left of the group.
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def _die_with_parent() -> None:
    """In the child, before exec: get SIGKILL if the parent dies without cleaning up
    (a harness killed by SIGTERM/SIGKILL runs no finally block), so no worker is orphaned."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@contextmanager
def process_group(argv: list[str], log_path: Path, env: dict[str, str]) -> Iterator[Any]:
    """Start `argv` in its own process group, logging to `log_path`; kill the group on exit."""
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(REPO),
            start_new_session=True,
            # Not thread-safe in theory; workers are started from one thread at a time.
            preexec_fn=_die_with_parent,
        )
    try:
        yield proc
    finally:
        _stop_group(proc)


def log_tail(path: Path, lines: int = 15) -> str:
    """Last lines of a worker log, to put in an error message."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@contextmanager
def private_redis(peer: str) -> Iterator[tuple[str, Path]]:
    """A throw-away redis-server on a unix socket in a temp dir; yields (socket, temp dir).

    Never SAND's own Redis: a fresh server, no TCP port, no persistence.
    """
    tmp = Path(tempfile.mkdtemp(prefix=f"peer-{peer}-"))
    sock = tmp / "redis.sock"
    argv = [REDIS_SERVER, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700"]
    argv += ["--save", "", "--appendonly", "no", "--dir", str(tmp), "--daemonize", "no"]
    try:
        with process_group(argv, tmp / "redis.log", dict(os.environ)) as proc:
            wait_until(peer, "redis-server", lambda: _redis_pings(sock, proc), START_TIMEOUT_S)
            yield str(sock), tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _redis_pings(sock: Path, proc: subprocess.Popen[bytes]) -> bool:
    import redis  # the project pins it; imported here so workers of Ray need not load it

    if proc.poll() is not None:
        raise RuntimeError(f"redis-server exited with {proc.returncode}")
    if not sock.exists():
        return False
    client = redis.Redis(unix_socket_path=str(sock))
    try:
        return bool(client.ping())
    finally:
        client.close()


# ---------------------------------------------------------------- stand-in grain context


class StandInData:
    """`context.data` of a SAND grain, backed by a plain dict (scope is accepted, ignored)."""

    def __init__(self, store: dict[str, Any]) -> None:
        self._store = store

    def get(self, key: str, default: Any = None, scope: str = "local") -> Any:
        return self._store.get(key, default)

    def put(self, key: str, value: Any, scope: str = "local") -> None:
        self._store[key] = value

    def delete(self, key: str, scope: str = "local") -> None:
        self._store.pop(key, None)

    def keys(self, prefix: str = "", scope: str = "local") -> list[str]:
        return [key for key in self._store if key.startswith(prefix)]


class StandInContext:
    """The minimum of SAND's grain context the image pipeline's grains use."""

    def __init__(self, execution_id: str, store: dict[str, Any]) -> None:
        self.execution_id = execution_id
        self.data = StandInData(store)
        self.logger = logging.getLogger("bench.peers.grain")


# ---------------------------------------------------------------- image pipeline data flow

_grains: dict[str, ModuleType] = {}


def grain(name: str) -> ModuleType:
    """The SAND grain module `name`, imported from its file once per process, unchanged."""
    if name not in _grains:
        path = PIPELINE_DIR / "grains" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"sand_grain_{name}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load grain {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _grains[name] = module
    return _grains[name]


def load_grains() -> None:
    """Import every grain now, so no measured task pays for Pillow's import."""
    for name in GRAINS:
        grain(name)


def pipeline_input() -> dict[str, Any]:
    """The example's input, as `expected.json` gives it."""
    import json

    return json.loads((PIPELINE_DIR / "expected.json").read_text())["main"]["input"]


def start_state(payload: dict[str, Any]) -> dict[str, Any]:
    """The state the first task receives: the input plus what the engine would keep aside.

    `_data` is the grains' data layer. The brief wants a dict local to the worker process,
    but a peer may run consecutive steps in different processes (prefork pool, several RQ
    workers, Ray workers), and `tag` reads what `transform` put: so the dict travels with
    the state, which costs the peers one small PNG (a few hundred bytes) per message.
    """
    return {**payload, "_execution_id": uuid.uuid4().hex, "_compute_ms": 0.0, "_data": {}}


def _event(step: str, state: dict[str, Any]) -> dict[str, Any]:
    """The event each grain gets, as the Parameters/InputPath of workflows/main.yaml build it."""
    if step == "extract_metadata":
        return {"image": state["image"]}
    if step == "transform":
        return {"image": state["image"], "metadata": state["metadata"]}
    if step == "tag":
        return state["normalized"]
    return {k: state[k] for k in ("name", "normalized", "metadata", "tags")}


# ResultPath of each step in workflows/main.yaml.
_RESULT_PATH = {
    "extract_metadata": "metadata",
    "transform": "normalized",
    "tag": "tags",
    "thumbnail": "thumbnail",
}


def run_step(step: str, state: dict[str, Any]) -> dict[str, Any]:
    """Run one grain on the state; time only `handle`, add it to the carried compute sum.

    The Choice state (PNG or JPEG) and the Catch branches are left out: the benchmark input
    is a valid PNG, so the engine would take the straight path too.
    """
    context = StandInContext(state["_execution_id"], state["_data"])
    event = _event(step, state)
    started = time.perf_counter()
    result = grain(step).handle(event, context)
    compute_ms = (time.perf_counter() - started) * 1000.0
    state = {**state, _RESULT_PATH[step]: result}
    state["_compute_ms"] += compute_ms
    if step == GRAINS[-1]:
        return final_output(state)
    return state


def final_output(state: dict[str, Any]) -> dict[str, Any]:
    """The `Done` Pass state, plus the compute sum the client needs."""
    output = {k: state[k] for k in ("name", "metadata", "tags", "thumbnail")}
    return {**output, "status": "processed", "compute_ms": state["_compute_ms"]}


def check_output(peer: str, output: dict[str, Any]) -> None:
    """Fail loudly if a peer's pipeline does not produce the example's expected output."""
    import json

    expected = json.loads((PIPELINE_DIR / "expected.json").read_text())["main"]["output"]
    got = {k: v for k, v in output.items() if k != "compute_ms"}
    if got != expected:
        raise AssertionError(f"{peer}: pipeline output {got} differs from expected {expected}")


def ms_since(t0: float) -> float:
    """Milliseconds elapsed since a perf_counter reading."""
    return (time.perf_counter() - t0) * 1000.0


def python() -> str:
    """The interpreter of the running venv, for worker subprocesses."""
    return sys.executable
