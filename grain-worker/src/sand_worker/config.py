"""The worker's configuration, read once from the environment its sandbox gives it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sand.contracts import Env


class WorkerConfigError(Exception):
    """A required setting is missing or invalid; the message names the variable."""


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    app: str
    app_dir: Path
    host_id: str
    redis_socket: Path
    redis_user: str | None
    redis_password: str | None
    # Children forked ahead of events, each blocked on the queue (see DESIGN.md:
    # one pre-forked child cannot be replaced fast enough under load).
    prefork: int
    # Most instances in flight per grain; beyond it events wait in the queue.
    max_concurrency: int
    # Extra time after a grain's deadline before its process group is killed.
    grace_s: float
    # Backup copies of every event to the host agent (for Kafka and recovery).
    backup: bool
    # Grains this host treats as running elsewhere: their events go through the global bus
    # (the host agent publishes them to the grain's Kafka topic) instead of the local queue.
    remote_grains: frozenset[str] = frozenset()
    # Grains placed on this host (decision 0013), whose workers this sandbox runs; None:
    # every grain of the app. Those not placed here are in remote_grains too.
    local_grains: frozenset[str] | None = None
    # The read end of a pipe only the host agent writes to: its end of file means the
    # agent is gone, and the sandbox stops (decision 0021). None: not watched (Docker).
    agent_fd: int | None = None
    # The app's key for the task tokens of callback tasks (decision 0033); b"": none given.
    task_token_key: bytes = b""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> WorkerConfig:
        env = os.environ if env is None else env

        def need(name: str) -> str:
            value = env.get(name)
            if not value:
                raise WorkerConfigError(f"environment variable {name} must be set")
            return value

        def number(name: str, default: str) -> int:
            raw = env.get(name, default)
            try:
                value = int(raw)
            except ValueError:
                raise WorkerConfigError(f"{name} must be an integer, got {raw!r}") from None
            if value < 1:
                raise WorkerConfigError(f"{name} must be >= 1, got {value}")
            return value

        return cls(
            app=need(Env.APP),
            app_dir=Path(need(Env.APP_DIR)),
            host_id=env.get(Env.HOST_ID, "host-1"),
            redis_socket=Path(need(Env.REDIS_SOCKET)),
            redis_user=env.get(Env.REDIS_USER) or None,
            redis_password=env.get(Env.REDIS_PASSWORD) or None,
            prefork=number(Env.PREFORK, "2"),
            max_concurrency=number(Env.MAX_CONCURRENCY, "64"),
            grace_s=float(env.get(Env.GRACE_S, "1.0")),
            backup=env.get(Env.BACKUP, "1") not in ("0", "false", "no"),
            remote_grains=_names(env.get(Env.REMOTE_GRAINS, "")),
            local_grains=None if Env.LOCAL_GRAINS not in env else _names(env[Env.LOCAL_GRAINS]),
            agent_fd=_fd(env.get(Env.AGENT_FD)),
            task_token_key=_hex(Env.TASK_TOKEN_KEY, env.get(Env.TASK_TOKEN_KEY, "")),
        )


def _fd(raw: str | None) -> int | None:
    """The open file descriptor ``raw`` names, or None when unset."""
    if not raw:
        return None
    try:
        fd = int(raw)
        os.fstat(fd)
    except (ValueError, OSError) as exc:
        raise WorkerConfigError(
            f"{Env.AGENT_FD} must name an open file descriptor, got {raw!r} ({exc})"
        ) from None
    return fd


def _names(raw: str) -> frozenset[str]:
    """A comma-separated list of names (empty entries ignored)."""
    return frozenset(filter(None, raw.split(",")))


def _hex(name: str, raw: str) -> bytes:
    try:
        return bytes.fromhex(raw)
    except ValueError:
        raise WorkerConfigError(
            f"{name} must be hexadecimal, got {len(raw)} other characters"
        ) from None
