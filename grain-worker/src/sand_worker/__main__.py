"""``python -m sand_worker``: the process a sandbox runs — one grain worker per grain.

Reads its settings from the environment (``WorkerConfig``), loads and validates
the application, then forks one worker per grain and keeps them alive: a worker
that dies is restarted (with a back-off) and reported on stderr, which the host
agent shows in ``sand logs``. SIGTERM stops every worker.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from enum import IntEnum
from typing import NoReturn

from sand.app import AppError, AppSpec, load_app
from sand.grain.runner import load_grain

from sand_worker.config import WorkerConfig, WorkerConfigError
from sand_worker.instance import Grain
from sand_worker.worker import GrainWorker

RESTART_BACKOFF_S = (0.1, 0.5, 1, 2, 5)


class WorkerExit(IntEnum):
    """How ``python -m sand_worker`` and the grain workers it forks exit."""

    OK = 0
    # A grain worker raised; its traceback is on stderr. It is restarted.
    CRASHED = 1
    # The configuration or the app is invalid: restarting would not help.
    CANNOT_START = 2


def main() -> int:
    try:
        config = WorkerConfig.from_env()
        app = load_app(config.app_dir)
    except (WorkerConfigError, AppError) as exc:
        print(f"sand-worker: cannot start: {exc}", file=sys.stderr, flush=True)
        return WorkerExit.CANNOT_START
    stopping = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    workers: dict[int, str] = {}
    failures: dict[str, int] = {}
    for name in app.grains:
        # a grain placed on other hosts only gets no worker here (decision 0013): its
        # events go through its Kafka topic to a host that runs it
        if config.local_grains is None or name in config.local_grains:
            workers[_spawn(app, name, config)] = name
    while not stopping:
        try:
            pid, status = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            break
        name = workers.pop(pid, "")
        if not name or stopping:
            continue
        failures[name] = failures.get(name, 0) + 1
        delay = RESTART_BACKOFF_S[min(failures[name], len(RESTART_BACKOFF_S)) - 1]
        print(
            f"sand-worker: worker of grain '{name}' (pid {pid}) {_ended(status)}; "
            f"restarting in {delay} s",
            file=sys.stderr,
            flush=True,
        )
        time.sleep(delay)
        while not stopping:
            try:
                workers[_spawn(app, name, config)] = name
                break
            except OSError as exc:  # the sandbox's pids limit is reached: try again later
                print(f"sand-worker: cannot restart grain '{name}': {exc}", file=sys.stderr)
                time.sleep(RESTART_BACKOFF_S[-1])
    for pid in workers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    for _ in workers:
        with contextlib.suppress(ChildProcessError):
            os.wait()
    return WorkerExit.OK


def _ended(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    try:
        if code < 0:
            return f"was killed by {signal.Signals(-code).name}"
        return f"exited with status {code} ({WorkerExit(code).name})"
    except ValueError:
        return f"ended with wait status {status}"


def _spawn(app: AppSpec, name: str, config: WorkerConfig) -> int:
    pid = os.fork()
    if pid:
        return pid
    _serve(app, name, config)


def _serve(app: AppSpec, name: str, config: WorkerConfig) -> NoReturn:
    code = WorkerExit.CRASHED
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        module = f"sand_grain_{name.replace('-', '_')}"
        handler, broken = load_grain(name, app.grains[name].path, module)
        if broken is not None:
            # the worker stays up: each event of this grain fails with States.Runtime
            # naming the error, and the app's other workflows are unaffected
            print(f"sand-worker: {broken}; its events fail", file=sys.stderr, flush=True)
        GrainWorker(Grain(app, name, handler), config).run()
        code = WorkerExit.OK
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
