"""The worker's Redis client against a real redis-server of its own (a private one per test)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from sand.localbus import BusUnreachable, LocalBus, ReplyError

from tests.unit.redis_server import private_redis


@pytest.fixture
def server(tmp_path: Path) -> Iterator[redis.Redis]:
    with private_redis(tmp_path) as client:
        yield client


@pytest.fixture
def bus(server: redis.Redis, tmp_path: Path) -> Iterator[LocalBus]:
    client = LocalBus(str(tmp_path / "redis.sock"))
    yield client
    client.close()


def test_commands_answerAsRedisPyDoes(bus: LocalBus, server: redis.Redis) -> None:
    """Each command the worker sends gives redis-py's reply shape (bytes, ints, None, tuples,
    floats), and what it writes is what redis-py reads back."""
    assert bus.ping() == b"PONG"
    assert bus.set("k", b"v\x00\xff", ex=60) is True
    assert 0 < server.ttl("k") <= 60
    assert bus.get("k") == b"v\x00\xff" and bus.get("absent") is None
    assert bus.lpush("q", b"a", b"b") == 2 and bus.rpush("q", "c") == 3
    assert server.lrange("q", 0, -1) == [b"b", b"a", b"c"] and bus.llen("q") == 3
    assert bus.brpop(["q"], timeout=1) == (b"q", b"c")
    assert bus.brpop(["empty"], timeout=0.05) is None
    assert bus.hincrby("h", "n", 5) == 5 and bus.hset("h", "s", 7) == 1
    assert server.hgetall("h") == {b"n": b"5", b"s": b"7"}
    assert bus.zadd("z", {b"m1": 1.5, "m2": 3}) == 2
    assert bus.zscore("z", "m1") == 1.5 and bus.zscore("z", "nope") is None
    assert bus.zrevrange("z", 0, 0) == [b"m2"]
    assert bus.delete("k", "q", "absent") == 2


def test_pipeline_sendsAllInOrder_raisesTheFirstErrorAfterReadingEveryReply(
    bus: LocalBus, server: redis.Redis
) -> None:
    pipe = bus.pipeline(transaction=False)
    pipe.lpush("q", b"x").set("s", b"1", ex=5).hincrby("h", "f", 2)
    assert pipe.execute() == [1, True, 2]
    assert bus.pipeline().execute() == []
    pipe = bus.pipeline()
    pipe.lpush("q", b"y")
    pipe.hincrby("s", "f", 1)  # WRONGTYPE: "s" is a string
    pipe.rpush("q", b"z")
    with pytest.raises(ReplyError, match="WRONGTYPE"):
        pipe.execute()
    # the commands around the error ran, and the connection is still in step
    assert server.lrange("q", 0, -1) == [b"y", b"x", b"z"]
    assert bus.ping() == b"PONG"


def test_script_loadsItselfOnNoscript_thenRunsBySha(bus: LocalBus, server: redis.Redis) -> None:
    script = bus.register_script("return {KEYS[1], ARGV[1], redis.call('INCR', KEYS[1])}")
    server.script_flush()
    assert script(keys=["n"], args=["a"]) == [b"n", b"a", 1]
    assert server.script_exists(script._sha) == [True]
    assert script(keys=["n"], args=["b"]) == [b"n", b"b", 2]
    broken = bus.register_script("return redis.call('NOSUCHCOMMAND')")
    with pytest.raises(ReplyError):
        broken()


def test_scanIter_findsEveryMatchingKey(bus: LocalBus, server: redis.Redis) -> None:
    for i in range(250):
        server.set(f"d:{i}", b"")
    server.set("other", b"")
    assert sorted(bus.scan_iter(match="d:*", count=50)) == sorted(
        f"d:{i}".encode() for i in range(250)
    )


def test_fork_childOpensItsOwnConnection_parentKeepsItsOwn(
    bus: LocalBus, server: redis.Redis
) -> None:
    """A forked child never writes on its parent's socket: it connects anew at its first
    command, and the parent's connection stays usable and in step."""
    assert bus.ping() == b"PONG"
    pid = os.fork()
    if pid == 0:
        try:
            bus.set("from-child", str(os.getpid()))
            bus.close()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert server.get("from-child") == str(pid).encode()
    assert bus.ping() == b"PONG"


def test_serverGone_raisesUnreachable_thenReconnectsWhenItIsBack(tmp_path: Path) -> None:
    with private_redis(tmp_path) as server:
        bus = LocalBus(str(tmp_path / "redis.sock"))
        assert bus.set("k", b"1") is True
        server.shutdown(nosave=True)
        with pytest.raises(BusUnreachable):
            bus.get("k")
    with pytest.raises(BusUnreachable, match=str(tmp_path)):
        bus.get("k")
    with private_redis(tmp_path):
        assert bus.get("k") is None  # a new server, reached by a new connection


def test_auth_usesUsernameAndPassword_wrongPasswordIsAReplyError(tmp_path: Path) -> None:
    sock = tmp_path / "redis.sock"
    server = subprocess.Popen(
        [
            "redis-server",
            "--port",
            "0",
            "--unixsocket",
            str(sock),
            "--save",
            "",
            "--appendonly",
            "no",
            "--user",
            "default",
            "off",
            "--user",
            "worker",
            "on",
            ">s3cret",
            "~*",
            "+@all",
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        good = LocalBus(str(sock), username="worker", password="s3cret")
        for _ in range(200):
            try:
                assert good.ping() == b"PONG"
                break
            except BusUnreachable:
                time.sleep(0.02)
        bad = LocalBus(str(sock), username="worker", password="wrong")
        with pytest.raises(ReplyError, match="WRONGPASS"):
            bad.ping()
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()


def test_sendThenReceive_blockingCommandAnsweredWhenItsSocketIsReadable(
    bus: LocalBus, server: redis.Redis
) -> None:
    """The worker's BRPOP: sent without waiting, its reply read once select says so."""
    import select

    fd = bus.send("BRPOP", "q", 5)
    assert select.select([fd], [], [], 0.1)[0] == []  # nothing queued: no reply yet
    server.lpush("q", b"event")
    assert select.select([fd], [], [], 5)[0] == [fd]
    assert bus.receive() == [b"q", b"event"]
    assert bus.ping() == b"PONG"  # the connection goes on as usual


def test_closeInherited_childDropsTheParentsConnection_parentKeepsIt(bus: LocalBus) -> None:
    bus.ping()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            bus.close_inherited()
            with pytest.raises(BusUnreachable):
                bus.receive()  # nothing of the parent's left to read from
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert bus.ping() == b"PONG"
