"""Fig. 5b of the SAND paper: one-way bus latency, Redis vs Kafka, Python and Java clients.

``bus_latency(n, gap_s)`` -> one-way latencies in ms of a 200-byte message carrying its
send time (wall-clock epoch, ``time.time()`` / Java ``Instant.now()``), one message at a
time: the producer waits until the consumer has received the previous message, sleeps
``gap_s``, sends. The series are described in :mod:`bench.micro`, which runs them.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import queue
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from sand.cluster.config import ClusterConfig, load_config

TOPIC = "sand.bench.latency"
PAYLOAD_BYTES = 200
WARMUP = 500
RECEIVE_TIMEOUT_S = 10.0
JAVA_DIR = Path(__file__).resolve().parent / "java"
JAR = JAVA_DIR / "target" / "bus-latency.jar"


class BenchError(RuntimeError):
    """A measurement could not be taken; the message names what failed."""


def _payload(seq: int) -> bytes:
    head = f"{time.time():.6f} {seq} ".encode()
    return head + b"x" * (PAYLOAD_BYTES - len(head))


def _latency_ms(message: bytes) -> float:
    now = time.time()
    sent = float(message[: message.index(b" ")])
    return (now - sent) * 1000


def _redis_consumer(
    socket_path: str, password: str, key: str, total: int, ready: Any, acks: Any, out: Any
) -> None:
    try:
        r = redis.Redis(unix_socket_path=socket_path, password=password or None)
        r.ping()
        ready.set()
        samples = []
        for _ in range(total):
            item: Any = r.brpop([key], timeout=int(RECEIVE_TIMEOUT_S))
            if item is None:
                raise BenchError(f"BRPOP {key} timed out")
            samples.append(_latency_ms(item[1]))
            acks.release()
        r.delete(key)
        out.put(("ok", samples))
    except Exception as e:
        out.put(("error", f"{type(e).__name__}: {e}"))
        ready.set()
        acks.release()


def _kafka_consumer(bootstrap: str, total: int, ready: Any, acks: Any, out: Any) -> None:
    try:
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"sand.bench.latency.py.{uuid.uuid4()}",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 1,
                "fetch.min.bytes": 1,
            }
        )
        try:
            meta = consumer.list_topics(TOPIC, timeout=30).topics[TOPIC]
            if meta.error is not None:
                raise KafkaException(meta.error)
            # position at the end of every partition BEFORE the producer starts
            parts = []
            for p in meta.partitions:
                _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)
                parts.append(TopicPartition(TOPIC, p, high))
            consumer.assign(parts)
            consumer.poll(0.5)  # let the fetcher start on the assigned offsets
            ready.set()
            samples: list[float] = []
            deadline = time.monotonic() + RECEIVE_TIMEOUT_S
            while len(samples) < total:
                msg = consumer.poll(0.1)
                if msg is None:
                    if time.monotonic() > deadline:
                        raise BenchError(f"message {len(samples)} not received on {TOPIC}")
                    continue
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise KafkaException(error)
                value = msg.value()
                assert value is not None
                samples.append(_latency_ms(value))
                acks.release()
                deadline = time.monotonic() + RECEIVE_TIMEOUT_S
        finally:
            consumer.close()
        out.put(("ok", samples))
    except Exception as e:
        out.put(("error", f"{type(e).__name__}: {e}"))
        ready.set()
        acks.release()


def _drive(
    series: str,
    consumer: Callable[..., None],
    consumer_args: tuple[Any, ...],
    send: Callable[[bytes], None],
    total: int,
    gap_s: float,
) -> list[float]:
    """Runs ``consumer`` in a spawned process and ``send`` here, one message at a time."""
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    acks = ctx.Semaphore(0)
    out = ctx.Queue()
    proc = ctx.Process(target=consumer, args=(*consumer_args, total, ready, acks, out))
    proc.start()

    def consumer_error() -> str:
        try:
            status, value = out.get_nowait()
        except queue.Empty:
            return "no message from the consumer process"
        return str(value) if status == "error" else "consumer finished early"

    try:
        if not ready.wait(60):
            raise BenchError(f"{series}: consumer process not ready within 60 s")
        if not out.empty():
            raise BenchError(f"{series}: consumer: {consumer_error()}")
        for seq in range(total):
            time.sleep(gap_s)
            send(_payload(seq))
            if not acks.acquire(timeout=RECEIVE_TIMEOUT_S):
                raise BenchError(f"{series}: message {seq} not received: {consumer_error()}")
        try:
            status, value = out.get(timeout=30)
        except queue.Empty as e:
            raise BenchError(f"{series}: consumer process sent no samples") from e
        if status != "ok":
            raise BenchError(f"{series}: consumer: {value}")
        return [float(x) for x in value][WARMUP:]
    finally:
        proc.join(5)
        if proc.is_alive():
            proc.terminate()
            proc.join(5)


def _python_redis(c: ClusterConfig, n: int, gap_s: float) -> list[float]:
    key = f"sand.bench.latency.py.{uuid.uuid4()}"
    socket_path = str(c.redis_socket)
    try:
        r = redis.Redis(unix_socket_path=socket_path, password=c.redis_password or None)
        r.ping()
    except redis.RedisError as e:
        raise BenchError(f"redis at unix socket {socket_path}: {e}") from e

    def send(message: bytes) -> None:
        r.lpush(key, message)

    try:
        return _drive(
            "python redis",
            _redis_consumer,
            (socket_path, c.redis_password, key),
            send,
            n + WARMUP,
            gap_s,
        )
    finally:
        r.delete(key)
        r.close()


def _ensure_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        if TOPIC in admin.list_topics(timeout=30).topics:
            return
        future = admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])
        try:
            future[TOPIC].result(30)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    except KafkaException as e:
        raise BenchError(f"kafka at {bootstrap}: topic {TOPIC}: {e}") from e


def _python_kafka(c: ClusterConfig, n: int, gap_s: float) -> list[float]:
    bootstrap = c.kafka_bootstrap
    _ensure_topic(bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": 1})
    producer.list_topics(TOPIC, timeout=30)  # connect before the first timed message
    errors: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    def send(message: bytes) -> None:
        producer.produce(TOPIC, message, on_delivery=delivered)
        if producer.flush(30) != 0 or errors:
            raise BenchError(f"kafka at {bootstrap}: produce to {TOPIC}: {errors or 'timeout'}")

    return _drive("python kafka", _kafka_consumer, (bootstrap,), send, n + WARMUP, gap_s)


def build_jar() -> Path:
    """Builds ``bench/java/target/bus-latency.jar`` with Maven if it is missing."""
    if JAR.exists():
        return JAR
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BenchError(f"{JAR} is missing and mvn is not on PATH to build it")
    proc = subprocess.run(
        [mvn, "-q", "-B", "-f", str(JAVA_DIR / "pom.xml"), "package"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0 or not JAR.exists():
        raise BenchError(f"mvn package in {JAVA_DIR} failed: {(proc.stdout + proc.stderr)[-3000:]}")
    return JAR


def _java(c: ClusterConfig, n: int, gap_s: float) -> dict[str, list[float]]:
    jar = build_jar()
    cmd = [
        "java",
        "-jar",
        str(jar),
        "--redis-socket",
        str(c.redis_socket),
        "--redis-password",
        c.redis_password,
        "--kafka",
        c.kafka_bootstrap,
        "--n",
        str(n),
        "--gap-ms",
        str(gap_s * 1000),
        "--warmup",
        str(WARMUP),
    ]
    timeout = 120 + 2 * (n + WARMUP) * (gap_s + 0.1)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise BenchError(f"java -jar {jar.name}: no result within {timeout:.0f} s") from e
    if proc.returncode != 0:
        raise BenchError(f"java -jar {jar.name}: {proc.stderr.strip()[-2000:]}")
    results: dict[str, list[float]] = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            results[record["series"]] = [float(x) for x in record["samples_ms"]]
    if set(results) != {"java redis", "java kafka"}:
        raise BenchError(f"java -jar {jar.name}: unexpected output {proc.stdout[-500:]!r}")
    return results


def redis_floor(n: int, gap_s: float) -> list[float]:
    """One-way LPUSH→BRPOP latencies (ms) between two Python processes: the local hop's floor."""
    return _python_redis(load_config(), n, gap_s)


def bus_latency(n: int, gap_s: float) -> dict[str, list[float]]:
    """One-way latencies (ms), n per series (see the module docstring)."""
    c = load_config()
    results = {
        "python redis": _python_redis(c, n, gap_s),
        "python kafka": _python_kafka(c, n, gap_s),
    }
    results.update(_java(c, n, gap_s))
    return results
