"""``python -m sand_worker``: the process a sandbox runs — one grain worker per grain.

Reads its settings from the environment (``WorkerConfig``), loads and validates
the application, then hands the grains placed here to a
:class:`~sand_worker.supervisor.WorkerSupervisor`, which forks one worker per grain
and keeps them alive until SIGTERM or until the host agent is gone (decision 0021).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import NoReturn

from sand.app import AppError, AppSpec, load_app
from sand.grain.context import log_grains_to_stderr
from sand.grain.runner import load_grain

from sand_worker.config import WorkerConfig, WorkerConfigError
from sand_worker.instance import Grain
from sand_worker.supervisor import WorkerExit, WorkerSupervisor
from sand_worker.worker import GrainWorker


def main() -> int:
    try:
        config = WorkerConfig.from_env()
        app = load_app(config.app_dir)
    except (WorkerConfigError, AppError) as exc:
        print(f"sand-worker: cannot start: {exc}", file=sys.stderr, flush=True)
        return WorkerExit.CANNOT_START
    # a grain placed on other hosts only gets no worker here (decision 0013): its events
    # go through its Kafka topic to a host that runs it
    grains = [
        name for name in app.grains if config.local_grains is None or name in config.local_grains
    ]

    def serve(name: str) -> NoReturn:
        _serve(app, name, config)

    return WorkerSupervisor(grains, serve, agent_fd=config.agent_fd).run()


def _serve(app: AppSpec, name: str, config: WorkerConfig) -> NoReturn:
    code = WorkerExit.CRASHED
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        # context.logger's records at INFO and above reach `sand logs` as in the emulator, each
        # line tagged with its execution and grain by the instance's stderr; before the grain
        # is imported, so that a level the grain's module sets stays
        log_grains_to_stderr("level=%(levelname)s %(message)s", logging.INFO)
        module = f"sand_grain_{name.replace('-', '_')}"
        handler, broken = load_grain(name, app.grains[name].path, module)
        if broken is not None:
            # the worker stays up: each event of this grain fails with States.Runtime
            # naming the error, and the app's other workflows are unaffected
            print(f"sand-worker: {broken}; its events fail", file=sys.stderr, flush=True)
        reason = None if broken is None else str(broken)
        GrainWorker(Grain(app, name, handler, reason), config).run()
        code = WorkerExit.OK
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
