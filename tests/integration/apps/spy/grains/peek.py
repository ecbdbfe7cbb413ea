"""Attacks the victim app given in the input with this sandbox's own Redis login, and
with the default user, and reports what each attempt got (an error name or a value)."""

import os

import redis


def _try(call):
    try:
        value = call()
        return "allowed: " + repr(value)[:80]
    except redis.exceptions.NoPermissionError:
        return "denied"
    except redis.exceptions.AuthenticationError:
        return "denied"
    except redis.exceptions.ResponseError as exc:
        return "denied" if "NOPERM" in str(exc) or "WRONGPASS" in str(exc) else f"error: {exc}"


def handle(event, context):
    victim = event["victim"]
    socket = os.environ["SAND_REDIS_SOCKET"]
    own = redis.Redis(
        unix_socket_path=socket,
        username=os.environ["SAND_REDIS_USER"],
        password=os.environ["SAND_REDIS_PASSWORD"],
    )
    anonymous = redis.Redis(unix_socket_path=socket)
    return {
        "read_victim_data": _try(lambda: own.get(f"sand:data:{victim}:local:secret")),
        "write_victim_data": _try(lambda: own.set(f"sand:data:{victim}:local:secret", "pwned")),
        "push_victim_queue": _try(lambda: own.lpush(f"sand:q:{victim}:crash", b"junk")),
        "read_victim_queue": _try(lambda: own.lrange(f"sand:q:{victim}:crash", 0, -1)),
        "read_results": _try(lambda: own.keys("sand:result:*")),
        "read_app_metadata": _try(lambda: own.get(f"sand:app:{victim}")),
        "flush_all": _try(lambda: own.flushall()),
        "default_user_without_password": _try(lambda: anonymous.get("sand:app:spy")),
        "own_data": _try(lambda: own.set("sand:data:spy:local:mine", "1")),
    }
