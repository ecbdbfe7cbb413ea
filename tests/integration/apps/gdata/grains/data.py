"""Runs the global-data operations of the event ("ops": [[name, *args], ...]) and reports
each result ({"ok": value}) or error ({"error": class name, "message": text})."""

import os
import time

import redis
from sand.data.agent import AgentDataStore
from sand_contracts.ttypes import DataOp, DataRequest
from thrift.protocol import TCompactProtocol
from thrift.TSerialization import serialize


def _inject(victim):
    """With this sandbox's own Redis login, try to act as app `victim` on its global data."""
    own = redis.Redis(
        unix_socket_path=os.environ["SAND_REDIS_SOCKET"],
        username=os.environ["SAND_REDIS_USER"],
        password=os.environ["SAND_REDIS_PASSWORD"],
    )
    forged = serialize(
        DataRequest(
            request_id="forged1",
            op=DataOp.PUT,
            key="stolen",
            value=b"Jtrue",
            deadline_ms=int(time.time() * 1000) + 10_000,
        ),
        TCompactProtocol.TCompactProtocolFactory(),
    )

    def attempt(call):
        try:
            call()
            return "allowed"
        except redis.exceptions.NoPermissionError:
            return "denied"
        except redis.exceptions.ResponseError as exc:
            return "denied" if "NOPERM" in str(exc) else f"error: {exc}"

    return {
        "push_request": attempt(lambda: own.lpush(f"sand:gdata:{victim}:requests", forged)),
        "read_requests": attempt(lambda: own.lrange(f"sand:gdata:{victim}:requests", 0, -1)),
        "read_reply": attempt(lambda: own.rpop(f"sand:gdata:{victim}:reply:forged1")),
        "list_keys": attempt(lambda: own.keys(f"sand:gdata:{victim}:*")),
    }


def _bench(context, n):
    """Milliseconds of each of n puts and gets, global and local, from this grain."""
    times = {"global_put": [], "global_get": [], "local_put": [], "local_get": []}
    value = {"payload": "x" * 100}
    for i in range(n):
        for scope in ("global", "local"):
            start = time.perf_counter()
            context.data.put(f"bench/{i}", value, scope=scope)
            middle = time.perf_counter()
            context.data.get(f"bench/{i}", scope=scope)
            end = time.perf_counter()
            times[f"{scope}_put"].append((middle - start) * 1000)
            times[f"{scope}_get"].append((end - middle) * 1000)
    return times


def _run(context, name, args):
    data = context.data
    if name == "put":
        return data.put(args[0], args[1], scope="global")
    if name == "put_big":
        return data.put(args[0], b"x" * args[1], scope="global")
    if name == "raw_put_big":
        # past the SDK's own check, straight to the agent: the agent must refuse it too
        store = AgentDataStore(data._stores["global"]._inner._redis, context.app_name)
        return store._call(DataOp.PUT, "put", args[0], b"x" * args[1]).ok
    if name == "get":
        return data.get(args[0], scope="global")
    if name == "keys":
        return data.keys(args[0], scope="global")
    if name == "delete":
        return data.delete(args[0], scope="global")
    if name == "inject":
        return _inject(args[0])
    if name == "bench":
        return _bench(context, args[0])
    raise ValueError(f"unknown op {name!r}")


def handle(event, context):
    results = []
    for name, *args in event.get("ops", []):
        try:
            results.append({"ok": _run(context, name, args)})
        except Exception as exc:
            results.append({"error": type(exc).__name__, "message": str(exc)})
    # an event that outlives the agent's 100 ms backup window has its backup and FINISHED
    # flag on the global bus (a shorter one may have neither: decision 0014)
    time.sleep(float(event.get("sleep_s", 0)))
    return {"host": os.environ.get("SAND_HOST_ID"), "results": results, "read": event.get("read")}
