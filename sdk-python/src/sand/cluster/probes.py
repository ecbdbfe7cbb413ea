"""Health probes: each answers "is this service usable right now?".

A probe returns ``None`` when healthy, or a short reason when not. Probes never
raise and never block longer than their timeout.
"""

from __future__ import annotations

import http.client
import socket
from collections.abc import Callable
from pathlib import Path

Probe = Callable[[], str | None]


def tcp(port: int, timeout_s: float = 1.0, host: str = "127.0.0.1") -> Probe:
    def probe() -> str | None:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return None
        except OSError as exc:
            return f"{host}:{port} refuses connections ({exc.strerror or exc})"

    return probe


def http_ok(
    port: int, path: str = "/health", timeout_s: float = 2.0, host: str = "127.0.0.1"
) -> Probe:
    def probe() -> str | None:
        conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            body = response.read(300).decode(errors="replace")
            return None if response.status == 200 else f"GET {path} -> {response.status} {body}"
        except OSError as exc:
            return f"GET http://{host}:{port}{path} failed ({exc})"
        finally:
            conn.close()

    return probe


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, socket_path: Path, timeout_s: float) -> None:
        super().__init__("localhost", timeout=timeout_s)
        self._socket_path = socket_path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(str(self._socket_path))
        self.sock = sock


def docker_ping(socket_path: Path, timeout_s: float = 2.0) -> Probe:
    def probe() -> str | None:
        conn = _UnixHTTPConnection(socket_path, timeout_s)
        try:
            conn.request("GET", "/_ping")
            response = conn.getresponse()
            body = response.read(100)
            return None if body == b"OK" else f"/_ping answered {response.status} {body!r}"
        except OSError as exc:
            return f"docker engine at {socket_path} unreachable ({exc})"
        finally:
            conn.close()

    return probe


def redis_ping(socket_path: Path, password: Callable[[], str], timeout_s: float = 1.0) -> Probe:
    def probe() -> str | None:
        import redis

        try:
            client = redis.Redis(
                unix_socket_path=str(socket_path), password=password(), socket_timeout=timeout_s
            )
            try:
                return None if client.ping() else "PING did not answer PONG"
            finally:
                client.close()
        except redis.RedisError as exc:
            return f"redis at {socket_path} unreachable ({exc})"

    return probe


def kafka_metadata(bootstrap: str, timeout_s: float = 3.0) -> Probe:
    def probe() -> str | None:
        from confluent_kafka.admin import AdminClient

        try:
            admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
            metadata = admin.list_topics(timeout=timeout_s)
            return None if metadata.brokers else "no broker in cluster metadata"
        except Exception as exc:  # the client raises KafkaException and plain errors
            return f"kafka at {bootstrap}: {exc}"

    return probe


def cassandra_query(port: int, host: str = "127.0.0.1", timeout_s: float = 5.0) -> Probe:
    def probe() -> str | None:
        from cassandra.cluster import Cluster, NoHostAvailable

        cluster = Cluster([host], port=port, connect_timeout=timeout_s, protocol_version=5)
        try:
            session = cluster.connect()
            session.execute("SELECT release_version FROM system.local", timeout=timeout_s)
            return None
        except (NoHostAvailable, OSError) as exc:
            return f"cassandra at {host}:{port}: {exc}"
        except Exception as exc:  # driver timeouts and protocol errors
            return f"cassandra at {host}:{port}: {type(exc).__name__}: {exc}"
        finally:
            cluster.shutdown()

    return probe
