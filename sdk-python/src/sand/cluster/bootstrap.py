"""The first user of a cluster: ``admin``, and its token in ``STATE/conf/admin.token``.

A fresh cluster has no user, so nobody could call its API. Once every service is ready,
`sand up` (and the test suites' cluster fixtures) call :func:`ensure_admin_token`: when the
token file is missing or its token is refused, it creates the user ``admin`` (role admin)
and a token for it by calling a host agent directly with the internal secret — as the
system, which needs no user — and writes the token to the file (mode 0600, atomically).
Whoever can read the state directory is the cluster's operator: the file is how they sign
in (``sand login < STATE/conf/admin.token``; this machine's `sand` uses it without).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sand.client import SandApiError, SandClient
from sand.cluster.config import ClusterConfig
from sand.credentials import looks_like_token, write_private_file

T = TypeVar("T")

ADMIN_USER = "admin"
BOOTSTRAP_LABEL = "bootstrap"
# An agent that just became healthy may still be opening its stores: retry what looks
# like "not yet" (no answer, 5xx) for this long.
_RETRY_S = 30.0
_RETRY_PAUSE_S = 0.5


class BootstrapError(Exception):
    """The admin token could not be checked or made; the message names the call that
    failed, its address and the server's answer."""


@dataclass(frozen=True, slots=True)
class AdminToken:
    """Where the admin token is, and whether this call made it (False: it was valid)."""

    path: Path
    created: bool


def admin_token(config: ClusterConfig) -> str:
    """The cluster's admin token, as :func:`ensure_admin_token` wrote it.

    Raises ``BootstrapError`` when the file is missing or unreadable."""
    path = config.admin_token_file
    try:
        token = path.read_text().strip()
    except OSError as exc:
        raise BootstrapError(
            f"cannot read the admin token {path} ({exc.strerror or exc}); "
            "`sand up` writes it once the cluster is ready"
        ) from exc
    if not token:
        raise BootstrapError(f"the admin token file {path} is empty; run `sand up` again")
    return token


def agent_url(config: ClusterConfig) -> str:
    """The first host's agent, reached from this machine's root namespace."""
    return config.host_plans[0].agent_url(config.ports.host_agent)


def ensure_admin_token(
    config: ClusterConfig,
    *,
    retry_s: float = _RETRY_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> AdminToken:
    """Make sure ``STATE/conf/admin.token`` holds a token the cluster accepts.

    Idempotent: a token the gateway accepts (``GET /v1/whoami``) is kept. Otherwise makes
    the user ``admin`` (role admin; one that exists already is fine) and a new token for it
    through the first host agent, and replaces the file. Blocks until done: calls that get
    no answer or a 5xx are retried for ``retry_s``. Raises ``BootstrapError``."""
    path = config.admin_token_file
    if path.exists() and _accepted(config, retry_s, clock, sleep):
        return AdminToken(path, created=False)
    agent = agent_url(config)
    system = SandClient(agent, internal_secret=config.internal_secret, timeout_s=30)
    step = f"creating the user '{ADMIN_USER}' (POST /v1/users)"
    try:
        _retrying(
            lambda: system.create_user(ADMIN_USER, role="admin"),
            retry_s,
            clock,
            sleep,
            ok_statuses=(409,),  # the user exists: a new token for it is all that is missing
        )
        step = f"creating a token for '{ADMIN_USER}' (POST /v1/tokens)"
        made = _retrying(
            lambda: system.create_token(user=ADMIN_USER, label=BOOTSTRAP_LABEL),
            retry_s,
            clock,
            sleep,
        )
    except SandApiError as exc:
        raise BootstrapError(f"{step} through the host agent at {agent}: {exc}") from exc
    if made is None or not looks_like_token(made.token):
        raise BootstrapError(
            f"POST {agent}/v1/tokens answered something that is not a SAND token "
            "(expected 'sand_' and 43 characters)"
        )
    try:
        write_private_file(path, made.token + "\n")
    except OSError as exc:
        raise BootstrapError(f"cannot write the admin token to {path}: {exc}") from exc
    return AdminToken(path, created=True)


def _accepted(
    config: ClusterConfig,
    retry_s: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> bool:
    """Whether the gateway accepts the token in the file (False on 401 or an empty file)."""
    token = admin_token(config)
    gateway = SandClient(config.gateway_url, token=token, timeout_s=30)
    try:
        _retrying(gateway.whoami, retry_s, clock, sleep)
    except SandApiError as exc:
        if exc.status == 401:
            return False
        raise BootstrapError(
            f"checking the admin token {config.admin_token_file}: GET "
            f"{config.gateway_url}/v1/whoami: {exc}"
        ) from exc
    return True


def _retrying(
    call: Callable[[], T],
    retry_s: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    ok_statuses: tuple[int, ...] = (),
) -> T | None:
    """``call()``; None when it raised a ``SandApiError`` with a status of ``ok_statuses``;
    retried while it gets no answer (status 0) or a 5xx, until ``retry_s`` passed."""
    deadline = clock() + retry_s
    while True:
        try:
            return call()
        except SandApiError as exc:
            if exc.status in ok_statuses:
                return None
            if not (exc.status == 0 or exc.status >= 500) or clock() >= deadline:
                raise
        sleep(_RETRY_PAUSE_S)
