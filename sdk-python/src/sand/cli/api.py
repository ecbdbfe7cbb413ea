"""What every command against a running cluster shares: which URL, which client, and how a
refused request ends (one line on stderr, no traceback, exit 2 or 1)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NoReturn, TypeVar

import click
from click.shell_completion import CompletionItem

from sand.cli.output import error_exit
from sand.cli.output import stderr as stderr  # re-exported: other command modules use it
from sand.client import Busy, SandApiError, SandClient
from sand.cluster.config import ConfigError, load_config
from sand.suggest import did_you_mean

T = TypeVar("T")

# Statuses of a request refused for what it asked (or who asked), or because the cluster is
# busy (429: retry later): exit 2. Others: exit 1.
REFUSED = (0, 400, 401, 403, 404, 409, 413, 429)

url_option = click.option(
    "--url",
    default=None,
    help="Gateway URL (default: $SAND_URL, else the local cluster's nginx).",
)


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
    """End the command with the server's refusal (JSON on stderr under ``--json``); a 429
    as ``busy: ... retry in N s`` (:func:`busy`)."""
    if isinstance(exc, Busy):
        busy(exc)
    error_exit(str(exc), 2 if exc.status in REFUSED else 1, status=exc.status or None)


def busy(exc: Busy) -> NoReturn:
    """Exit 2 with ``busy: <the server's message>`` (which names the application, the host and
    the bound, and ends ``retry in N s``); under ``--json`` the error document carries
    ``retry_after_s``."""
    retry = exc.retry_after_s
    text = exc.server_message or "the cluster has no room for more work now"
    if retry is not None and "retry in" not in text:
        text = f"{text}; retry in {retry} s"
    error_exit(f"{text}", 2, status=exc.status, label="busy", extra={"retry_after_s": retry})


def api_call(call: Callable[[], T]) -> T:
    """``call()``, or exit with its ``SandApiError``'s message."""
    try:
        return call()
    except SandApiError as exc:
        fail(exc)


def app_call(api: SandClient, app: str, call: Callable[[], T]) -> T:
    """``call()`` of something of the application ``app``, or exit with its refusal
    (:func:`refused`)."""
    try:
        return call()
    except SandApiError as exc:
        refused(api, app, exc)


def refused(api: SandClient, app: str, exc: SandApiError) -> NoReturn:
    """Exit with ``exc``; a 404 for an application that is not deployed says so and
    suggests the closest name deployed ("no application 'helo'; did you mean 'hello'?")."""
    if exc.status != 404:
        fail(exc)
    try:
        names = [str(listed.get("name")) for listed in api.apps()]
    except SandApiError:
        fail(exc)  # cannot tell: the original refusal is the best message
    if app in names:
        fail(exc)  # the app exists: the 404 is about something else
    error_exit(f"no application '{app}'{did_you_mean(app, names)}", 2, status=404)


# How long completing an app name may wait for the gateway: a shell must not hang on TAB.
_COMPLETION_TIMEOUT_S = 2.0


def complete_app_name(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Shell completion of an APP argument: the deployed apps' names (``GET /v1/apps``),
    with the ``--url`` given so far; none when the gateway cannot be asked."""
    try:
        api = SandClient(gateway_url(ctx.params.get("url")), timeout_s=_COMPLETION_TIMEOUT_S)
        names = [str(app.get("name")) for app in api.apps()]
    except Exception:  # completion must never print a traceback into the shell
        return []
    return [CompletionItem(name) for name in sorted(names) if name.startswith(incomplete)]
