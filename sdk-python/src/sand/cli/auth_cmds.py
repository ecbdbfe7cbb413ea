"""Who is calling: login, logout, whoami; and the admin's users and everyone's tokens.

A token never appears on a command line (shell history, ``ps``): `sand login` reads it from
a hidden prompt or from stdin, and `sand tokens create` prints a new one once, alone on
stdout, so that it can go straight to a file.
"""

from __future__ import annotations

import os
from dataclasses import asdict

import click
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from sand.cli.api import api_call, client, gateway_url, url_option
from sand.cli.output import emit_json, json_option, say, stderr, stdout
from sand.client import SandClient, TokenInfo, User
from sand.credentials import (
    TOKEN_ENV,
    Credential,
    CredentialsError,
    credentials_path,
    looks_like_token,
    remove_credential,
    save_credential,
)

# -- login, logout, whoami ---------------------------------------------------------------


@click.command()
@url_option
def login(url: str | None) -> None:
    """Sign in: read a token, check it with the server, save it for the URL.

    The token is read from a hidden prompt, or from stdin when stdin is not a terminal
    (`sand login < STATE/conf/admin.token`); never from the command line. It is saved in
    ${XDG_CONFIG_HOME:-~/.config}/sand/credentials.json (mode 0600), keyed by the URL."""
    base = gateway_url(url)
    token = _read_token()
    if not looks_like_token(token):
        # never echo what was given: it may be a secret of another kind
        raise click.UsageError(
            f"that is not a SAND token: expected 'sand_' and 43 letters, digits, '-' or '_' "
            f"({len(token)} characters given)"
        )
    identity = api_call(lambda: SandClient(base, token=token).whoami())
    path = credentials_path()
    try:
        save_credential(base, Credential(token, identity.user), path)
    except CredentialsError as exc:
        raise click.ClickException(str(exc)) from exc
    err = stderr()
    say(f"signed in as {identity.user} ({identity.role}) at {base}")
    if os.environ.get(TOKEN_ENV, "").strip():
        err.print(f"[yellow]note:[/yellow] ${TOKEN_ENV} is set and is used instead of this token")


def _read_token() -> str:
    stdin = click.get_text_stream("stdin")
    if stdin.isatty():
        return str(click.prompt("token", hide_input=True, err=True)).strip()
    token = stdin.readline().strip()
    if not token:
        raise click.UsageError("no token on stdin (give it as `sand login < FILE`)")
    return token


@click.command()
@url_option
def logout(url: str | None) -> None:
    """Forget the token saved for the URL. The token stays valid: `sand tokens revoke ID`
    ends it."""
    base = gateway_url(url)
    path = credentials_path()
    try:
        removed = remove_credential(base, path)
    except CredentialsError as exc:
        raise click.ClickException(str(exc)) from exc
    say(f"signed out of {base}" if removed else f"not signed in at {base}")
    if os.environ.get(TOKEN_ENV, "").strip():
        stderr().print(f"[yellow]note:[/yellow] ${TOKEN_ENV} is still set and still used")


@click.command()
@url_option
@json_option
def whoami(url: str | None, as_json: bool) -> None:
    """Show the user and role the server takes you for, and where the token came from."""
    api = client(url)
    identity = api_call(api.whoami)
    if as_json:
        emit_json({**asdict(identity), "url": api.base_url})
        return
    click.echo(f"{identity.user} ({identity.role}) at {api.base_url}")
    stderr().print(f"[dim]token {identity.token_id}, from {escape(str(api.token_source))}[/dim]")


# -- users (admin) ---------------------------------------------------------------------------


@click.group(invoke_without_command=True)
@url_option
@json_option
@click.pass_context
def users(ctx: click.Context, url: str | None, as_json: bool) -> None:
    """List the users (admin only); `users create` and `users delete` change them."""
    ctx.obj = {"url": url}
    if ctx.invoked_subcommand is not None:
        return
    listed = api_call(lambda: client(url).users())
    if as_json:
        emit_json([asdict(user) for user in listed])
        return
    stdout().print(_users_table(listed))


def _users_table(listed: list[User]) -> Table:
    table = Table(title="users")
    for column in ("user", "role", "created"):
        table.add_column(column)
    for user in listed:
        table.add_row(*map(Text, (user.name, user.role, user.created or "-")))
    return table


def _group(ctx: click.Context, name: str, value: str | None) -> str | None:
    """The subcommand's option, else the group's (`sand users --url U create ada`)."""
    if value is not None:
        return value
    given = (ctx.obj or {}).get(name)
    return str(given) if given is not None else None


def _url(ctx: click.Context, url: str | None) -> str | None:
    return _group(ctx, "url", url)


@users.command(name="create")
@click.argument("name")
@click.option("--admin", is_flag=True, help="Give the user the admin role.")
@url_option
@json_option
@click.pass_context
def create_user(ctx: click.Context, name: str, admin: bool, url: str | None, as_json: bool) -> None:
    """Add the user NAME (a lower-case letter, then up to 31 lower-case letters, digits or
    '-'). Give them a token with `sand tokens create --user NAME`."""
    role = "admin" if admin else "user"
    user = api_call(lambda: client(_url(ctx, url)).create_user(name, role=role))
    if as_json:
        emit_json(asdict(user))
        return
    say(
        f"created user {user.name} ({user.role}); "
        f"give them a token: sand tokens create --user {user.name}"
    )


@users.command(name="delete")
@click.argument("name")
@url_option
@json_option
@click.pass_context
def delete_user(ctx: click.Context, name: str, url: str | None, as_json: bool) -> None:
    """Remove the user NAME; their tokens stop working at once, their apps stay deployed."""
    revoked = api_call(lambda: client(_url(ctx, url)).delete_user(name))
    if as_json:
        emit_json({"deleted": name, "tokens_revoked": revoked})
        return
    say(f"deleted user {name}; revoked {revoked} token{'s' if revoked != 1 else ''}")


# -- tokens ----------------------------------------------------------------------------------


@click.group(invoke_without_command=True)
@click.option("--user", default=None, help="Another user's tokens (admin only).")
@url_option
@json_option
@click.pass_context
def tokens(ctx: click.Context, user: str | None, url: str | None, as_json: bool) -> None:
    """List your tokens (never the tokens themselves: only their ids); `tokens create` and
    `tokens revoke` change them."""
    ctx.obj = {"url": url, "user": user}
    if ctx.invoked_subcommand is not None:
        return
    listed = api_call(lambda: client(url).tokens(user))
    if as_json:
        emit_json([asdict(token) for token in listed])
        return
    stdout().print(_tokens_table(listed))


def _tokens_table(listed: list[TokenInfo]) -> Table:
    table = Table(title="tokens")
    for column in ("id", "user", "label", "created", "expires"):
        table.add_column(column)
    for token in listed:
        cells = (token.id, token.user, token.label or "-", token.created or "-", token.expires)
        table.add_row(*map(Text, (*cells[:4], cells[4] or "never")))
    return table


@tokens.command(name="create")
@click.option("--user", default=None, help="For another user (admin only); default: you.")
@click.option("--label", default=None, help="A note to tell the token apart, like 'laptop'.")
@click.option(
    "--expires-in-days",
    type=click.IntRange(min=1),
    default=None,
    help="Stop working after N days (default: never).",
)
@url_option
@json_option
@click.pass_context
def create_token(
    ctx: click.Context,
    user: str | None,
    label: str | None,
    expires_in_days: int | None,
    url: str | None,
    as_json: bool,
) -> None:
    """Make a new token and print it once, alone on stdout: the server keeps only its hash,
    so it cannot be shown again (`sand tokens create > FILE`, then `sand login < FILE`)."""
    user = _group(ctx, "user", user)
    made = api_call(
        lambda: client(_url(ctx, url)).create_token(
            user=user, label=label, expires_in_days=expires_in_days
        )
    )
    if as_json:
        emit_json({**asdict(made.info), "token": made.token}, indent=None)
    else:
        click.echo(made.token)
    expires = f", expires {made.info.expires}" if made.info.expires else ""
    stderr().print(
        escape(f"token {made.info.id} for {made.info.user}{expires}: ")
        + "[bold]shown once[/bold], it cannot be shown again; keep it secret"
    )


@tokens.command(name="revoke")
@click.argument("token_id", metavar="ID")
@url_option
@json_option
@click.pass_context
def revoke_token(ctx: click.Context, token_id: str, url: str | None, as_json: bool) -> None:
    """Revoke the token ID (yours; an admin: anyone's): it stops working at once."""
    api_call(lambda: client(_url(ctx, url)).revoke_token(token_id))
    if as_json:
        emit_json({"revoked": token_id})
        return
    say(f"revoked {token_id}")


COMMANDS: list[click.Command] = [login, logout, whoami, users, tokens]
