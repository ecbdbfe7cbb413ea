"""What every command against a running cluster shares: which URL, which client, and how a
refused request ends (one line on stderr, no traceback, exit 2 or 1)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NoReturn, TypeVar

import click
from rich.console import Console
from rich.markup import escape

from sand.client import SandApiError, SandClient
from sand.cluster.config import ConfigError, load_config

T = TypeVar("T")

# Statuses of a request refused for what it asked (or who asked): exit 2. Others: exit 1.
REFUSED = (0, 400, 401, 403, 404, 409, 413)

url_option = click.option(
    "--url",
    default=None,
    help="Gateway URL (default: $SAND_URL, else the local cluster's nginx).",
)


def stderr() -> Console:
    # rich resolves sys.stderr at print time, so click's CliRunner captures it
    return Console(stderr=True, highlight=False, soft_wrap=True)


def gateway_url(url: str | None) -> str:
    """``--url``, else ``$SAND_URL``, else the local cluster's nginx."""
    if url is None:
        url = os.environ.get("SAND_URL")
    if url is None:
        try:
            url = load_config().gateway_url
        except ConfigError as exc:
            raise click.ClickException(f"configuration: {exc}") from exc
    return url


def client(url: str | None) -> SandClient:
    """A client of the gateway, with the token ``resolve_token`` finds."""
    return SandClient(gateway_url(url))


def fail(exc: SandApiError) -> NoReturn:
    stderr().print(f"[red]error:[/red] {escape(str(exc))}")
    raise SystemExit(2 if exc.status in REFUSED else 1)


def api_call(call: Callable[[], T]) -> T:
    """``call()``, or exit with its ``SandApiError``'s message."""
    try:
        return call()
    except SandApiError as exc:
        fail(exc)
