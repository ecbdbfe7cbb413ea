"""`python -m bench.zygote`: what the grain worker's zygote weighs, and what a fork of it costs.

Standalone: no SAND stack, only a private ``redis-server`` (unix socket in a temporary
directory, no port, no persistence) that this script starts and stops. Prints figures;
passes or fails nothing. Run from the repository root::

    PYTHONPATH=sdk-python/src:workflows/src:grain-worker/src:. \\
        .venv/bin/python -m bench.zygote --before main

Each probe is a fresh ``python -m bench.zygote --probe`` that runs the real
``sand_worker.__main__.main()`` (the sandbox's supervisor, which forks the grain worker)
for one grain of an example app. ``GrainWorker._fill_pool`` is wrapped so that, at its
first call (everything ``GrainWorker.run`` builds before its first fork exists, the
collector frozen), the worker measures itself:

* **zygote**: its ``RssAnon`` (``/proc/self/status``) and how many modules it holds;
* **bare fork**: ``os.fork()``, child ``os._exit(0)``, ``os.wait4``: CPU of the parent
  (``time.process_time``) and of the child (the rusage of ``wait4``), and wall time;
* **event**: one INVOKE event of the app's workflow, pushed on the grain's queue. Since
  decision 0029 the worker takes it and steps the workflow (``EventHandler.begin``), an
  instance its zygote forked runs the grain, and the worker completes the step (the
  outputs, backups, flag, record and result go to Redis): the instance's CPU and minor
  page faults over its whole life (as the zygote reaped it), the worker's and the
  zygote's CPU for the event, and the wall time from the push to the instance's end. In
  a tree from before it, the instance takes the event from the queue and handles it end
  to end (``wait4`` rusage).

Then it stops the supervisor and exits. ``--before REF`` measures the tree of git ref REF
(exported with ``git archive`` to a temporary directory) beside this one, probes of the
two interleaved (A/B/A/B...) so that the machine's drift hits both alike.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

# Only what the worker imports anyway is imported at module level: the probe runs in
# the measured process, and must not weigh on what it measures.

_RESULT_PREFIX = "ZYGOTE-PROBE "
# Modules whose presence in the zygote the report names.
_WATCHED = (
    "yaml",
    "jsonata",
    "jsonpath_ng",
    "importlib.metadata",
    "asyncio",
    "redis.asyncio",
    "sand_workflows.loader",
    "sand_workflows.asl_loader",
    "sand.app",
    "sand.placement",
)
_APPS = {
    # app directory under examples/ -> (grain probed, input of the workflow "main")
    "hello": ("normalize", {"name": "  ada   lovelace "}),
    "asl-orders": (
        "validate-order",
        {
            "order_id": "A-1001",
            "customer": "ada",
            "items": [{"sku": "apple", "qty": 3}, {"sku": "pear", "qty": 2}],
        },
    ),
}


# -- the probe (inside the measured worker) ----------------------------------------------


def _rss_anon_kb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    raise RuntimeError("no RssAnon in /proc/self/status")


def _bare_forks(count: int) -> dict[str, list[float]]:
    parent_ms, child_ms, wall_ms = [], [], []
    for _ in range(count):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        _, _, usage = os.wait4(pid, 0)
        wall_ms.append((time.perf_counter() - wall0) * 1000)
        parent_ms.append((time.process_time() - cpu0) * 1000)
        child_ms.append((usage.ru_utime + usage.ru_stime) * 1000)
    return {"fork_parent_ms": parent_ms, "fork_child_ms": child_ms, "fork_wall_ms": wall_ms}


def _blocked_clients(client: Any) -> int:
    """How many clients wait in a blocking command (the forked instance in its BRPOP), with
    the worker's own client: redis-py's before decision 0028, ``LocalBus`` since."""
    if hasattr(client, "info"):
        return int(client.info("clients")["blocked_clients"])
    (text,) = client.run([(("INFO", "clients"), None)])
    for line in text.decode().splitlines():
        if line.startswith("blocked_clients:"):
            return int(line.split(":", 1)[1])
    return 0


def _events(worker: Any, pool: Any, count: int, payload: dict[str, Any]) -> dict[str, Any]:
    """``count`` events, each run by a fresh instance of the worker's pool: the worker's own
    steps around it (decision 0029), or, in a tree from before it, the instance's whole
    handling of the event it takes from the queue."""
    from sand import keys
    from sand.contracts import HEADER_STARTED_MS
    from sand_worker.bus import EventFlag, EventKind, EventMessage, connect, encode

    config, grain = worker._config, worker._grain.name
    queue = keys.queue_key(config.app, grain)
    # The probe's own connection: the worker's client must stay unconnected in the zygote.
    client = connect(config)
    thin = hasattr(worker._handler, "begin")
    cpu_ms, minflt, wall_ms, parent_ms, results = [], [], [], [], 0
    for i in range(count):
        child = pool.fork(worker._serve, grain=grain, **({"tasks": True} if thin else {}))
        if not thin:
            deadline = time.monotonic() + 5
            while _blocked_clients(client) < 1 and time.monotonic() < deadline:
                time.sleep(0.002)
        else:
            time.sleep(0.005)  # the child reaches its task pipe, as one forked ahead would
        execution_id = f"zygote-{os.getpid()}-{i}"
        now = int(time.time() * 1000)
        event = EventMessage(
            event_id=f"{execution_id}-invoke",
            execution_id=execution_id,
            app=config.app,
            workflow="main",
            kind=EventKind.INVOKE,
            flag=EventFlag.PROCESSING,
            created_ms=now,
            attempt=0,
            target_grain=grain,
            payload=json.dumps(payload).encode(),
            headers={HEADER_STARTED_MS: str(now)},
        )
        wall0 = time.perf_counter()
        client.lpush(queue, encode(event))
        zygote = getattr(pool, "_zygote", None)
        if zygote is not None:
            # the zygote reaps the instance and reports what it used
            zygote_cpu = _cpu_ms_of(zygote.pid)
            cpu0 = time.process_time()
            _thin_event(worker, pool, child, client.brpop([queue], 5)[1])
            while not any(end.child is child for end in pool.wait(5)):
                pass
            wall_ms.append((time.perf_counter() - wall0) * 1000)
            parent = (time.process_time() - cpu0) * 1000
            parent_ms.append(parent + _cpu_ms_of(zygote.pid) - zygote_cpu)
            status = 0 if child.cpu_ms is not None else -1
            cpu_ms.append(child.cpu_ms or 0.0)
            minflt.append(child.minflt or 0)
        else:
            if thin:
                parent_ms.append(_thin_event(worker, pool, child, client.brpop([queue], 5)[1]))
            _, status, usage = os.wait4(child.pid, 0)
            wall_ms.append((time.perf_counter() - wall0) * 1000)
            cpu_ms.append((usage.ru_utime + usage.ru_stime) * 1000)
            minflt.append(usage.ru_minflt)
            pool.wait(0)  # the pool forgets it (already reaped here)
        if status != 0:
            raise RuntimeError(f"the instance of event {i} ended with wait status {status}")
        # the workflow went on (a TASK to the next grain, or its end) and was handed over
        results += client.llen(keys.agent_key(config.host_id)) > 0
        client.delete(keys.agent_key(config.host_id))
    return {
        "event_cpu_ms": cpu_ms,
        "event_minflt": minflt,
        "event_wall_ms": wall_ms,
        "event_parent_ms": parent_ms,
        "events_handed_over": results,
    }


def _cpu_ms_of(pid: int) -> float:
    """User + system CPU of process ``pid`` so far, in ms (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _thin_event(worker: Any, pool: Any, child: Any, raw: bytes) -> float:
    """The worker's part of one event: begin, assign, wait for the result, complete.
    Returns the worker's CPU for it in ms (its waits excluded)."""
    handler = worker._handler
    cpu0 = time.process_time()
    pending = handler.begin(raw)
    if not pool.assign(
        child, pending.task, taken=raw, token=pending.call.token, timeout_s=pending.timeout_s
    ):
        raise RuntimeError("the instance did not take its task")
    cpu = time.process_time() - cpu0
    while not (turn := pool.turn(5)).delivered:
        if turn.ended:
            raise RuntimeError("the instance ended without its result")
    cpu0 = time.process_time()
    handler.complete(pending, child.result, child.wrote)
    return (cpu + time.process_time() - cpu0) * 1000


def _probe(app_dir: str, forks: int, events: int) -> None:
    """Run the supervisor of ``app_dir``'s probed grain; its worker measures itself."""
    from sand_worker import __main__ as entry
    from sand_worker.worker import GrainWorker

    app = os.path.basename(app_dir.rstrip("/"))
    grain, payload = _APPS[app]
    os.environ.update({"SAND_APP": app, "SAND_APP_DIR": app_dir, "SAND_LOCAL_GRAINS": grain})
    fill_pool = GrainWorker._fill_pool

    def measure(worker: GrainWorker, pool: Any) -> None:
        try:
            figures: dict[str, Any] = {
                "rss_anon_kb": _rss_anon_kb(),
                "modules": len(sys.modules),
                "watched": [m for m in _WATCHED if m in sys.modules],
            }
            figures |= _bare_forks(forks)
            figures |= _events(worker, pool, events, payload)
            print(_RESULT_PREFIX + json.dumps(figures), flush=True)
        finally:
            os.kill(os.getppid(), 15)  # the supervisor stops; so does this worker
            worker._stopping = True
            GrainWorker._fill_pool = fill_pool  # type: ignore[method-assign]

    GrainWorker._fill_pool = measure  # type: ignore[method-assign]
    sys.exit(entry.main())


# -- the driver -----------------------------------------------------------------------


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    import argparse
    import contextlib
    import shutil
    import signal
    import statistics
    import subprocess
    import tempfile
    from pathlib import Path

    parser = argparse.ArgumentParser(prog="python -m bench.zygote", description=__doc__)
    parser.add_argument("--before", help="a git ref to measure beside this tree")
    parser.add_argument("--rounds", type=int, default=6, help="probes per app and variant")
    parser.add_argument("--forks", type=int, default=60, help="bare forks per probe")
    parser.add_argument("--events", type=int, default=20, help="events per probe")
    parser.add_argument("--apps", default=",".join(_APPS), help="example apps to probe")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        _probe(args.probe, args.forks, args.events)
        return 0

    # a SIGTERM unwinds like an exception: the private redis-server is stopped all the same
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(1))
    root = Path(__file__).resolve().parent.parent
    sources = ("sdk-python/src", "workflows/src", "grain-worker/src")
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sand-zygote-")))
        variants = {"this tree": root}
        if args.before:
            before = tmp / "before"
            before.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(root), "archive", args.before, *sources],
                check=True,
                capture_output=True,
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
            variants = {f"before ({args.before})": before, "after (this tree)": root}
        sock = tmp / "redis.sock"
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        server = subprocess.Popen(
            [binary, "--port", "0", "--unixsocket", str(sock), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        stack.callback(server.wait)
        stack.callback(server.kill)
        for _ in range(250):
            if sock.exists():
                break
            time.sleep(0.02)
        apps = args.apps.split(",")
        figures: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for round_no in range(args.rounds):
            for app in apps:
                order = list(variants.items())
                if round_no % 2:
                    order.reverse()  # A/B, then B/A: neither always runs first
                for name, tree in order:
                    path = [str(tree / s) for s in sources] + [str(root)]
                    env = os.environ | {
                        "PYTHONPATH": os.pathsep.join(path),
                        "SAND_REDIS_SOCKET": str(sock),
                        "SAND_PREFORK": "1",
                    }
                    for key in ("SAND_AGENT_FD", "SAND_REDIS_USER", "SAND_REDIS_PASSWORD"):
                        env.pop(key, None)
                    command = [sys.executable, "-m", "bench.zygote", "--probe"]
                    command += [str(root / "examples" / app), "--forks", str(args.forks)]
                    probe = subprocess.run(
                        [*command, "--events", str(args.events)],
                        cwd=tmp,
                        env=env,
                        capture_output=True,
                        text=True,
                        timeout=300,
                    )
                    lines = [
                        line[len(_RESULT_PREFIX) :]
                        for line in probe.stdout.splitlines()
                        if line.startswith(_RESULT_PREFIX)
                    ]
                    if not lines:
                        print(probe.stdout, probe.stderr, file=sys.stderr)
                        raise SystemExit(f"the probe of {app} ({name}) measured nothing")
                    figures.setdefault((app, name), []).append(json.loads(lines[0]))
                    print(f"round {round_no + 1}/{args.rounds}: {app}, {name}", file=sys.stderr)
    _report(figures, statistics.median)
    return 0


def _report(figures: dict[tuple[str, str], list[dict[str, Any]]], median: Any) -> None:
    series = (
        ("fork_parent_ms", "bare fork: parent CPU ms"),
        ("fork_child_ms", "bare fork: child CPU ms"),
        ("fork_cpu_ms", "bare fork: CPU ms (parent + child)"),
        ("fork_wall_ms", "bare fork: wall ms"),
        ("event_cpu_ms", "one event: instance CPU ms"),
        ("event_minflt", "one event: instance minor faults"),
        ("event_wall_ms", "one event: wall ms, push to exit"),
        ("event_parent_ms", "one event: worker (+ zygote) CPU ms, thin instances"),
    )
    for (app, variant), probes in figures.items():
        merged: dict[str, list[float]] = {}
        for probe in probes:
            for key, values in probe.items():
                if isinstance(values, list) and key != "watched":
                    merged.setdefault(key, []).extend(values)
        merged["fork_cpu_ms"] = [
            p + c for p, c in zip(merged["fork_parent_ms"], merged["fork_child_ms"], strict=True)
        ]
        rss = median([p["rss_anon_kb"] for p in probes]) / 1024
        print(f"\n== {app}, {variant}: {len(probes)} probes")
        print(f"  zygote RssAnon           {rss:8.1f} MB")
        print(f"  zygote modules           {median([p['modules'] for p in probes]):8.0f}")
        print(f"  of which heavy           {', '.join(probes[0]['watched']) or '-'}")
        handed = sum(p["events_handed_over"] for p in probes)
        print(f"  events handed over       {handed:8d} of {len(merged['event_cpu_ms'])}")
        for key, label in series:
            values = merged.get(key) or []
            if not values:
                continue
            print(
                f"  {label:<36} median {median(values):8.2f}  p99 {_percentile(values, 0.99):8.2f}"
                f"  (n={len(values)})"
            )


if __name__ == "__main__":
    sys.exit(main())
