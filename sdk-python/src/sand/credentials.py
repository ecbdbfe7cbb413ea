"""Where a client's bearer token comes from, and the file `sand login` keeps it in.

A client of the HTTP API sends ``Authorization: Bearer <token>`` on every ``/v1`` call.
Without an explicit token, :func:`resolve_token` looks, in order, at:

1. ``$SAND_TOKEN``;
2. the credentials file, ``${XDG_CONFIG_HOME:-~/.config}/sand/credentials.json`` (mode
   0600), a JSON object keyed by the API's base URL:
   ``{"http://127.0.0.1:18080": {"token": "sand_...", "user": "ada"}}``;
3. the local cluster's bootstrap admin token, ``STATE/conf/admin.token``, when the default
   configuration's state dir is readable and its nginx URL is the client's URL: whoever can
   read that directory can read every secret of the cluster, so is its admin anyway.

A token is a secret: nothing here prints or logs one, and the records that hold one leave it
out of their ``repr``. Files holding one are written atomically with mode 0600.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from sand import contracts

# The HTTP contract with the frontends and host agents (frontend/openapi.yaml); the names
# Java shares are declared once, in contracts.thrift.
TOKEN_ENV: Final = "SAND_TOKEN"
INTERNAL_HEADER: Final = contracts.HEADER_INTERNAL
TOKEN_FORMAT: Final = contracts.TOKEN_FORMAT


class CredentialsError(Exception):
    """The credentials file cannot be read or written; the message names it and why."""


@dataclass(frozen=True, slots=True)
class Credential:
    """A saved sign-in: the token and the user it belongs to (as whoami said at login)."""

    token: str = field(repr=False)
    user: str | None = None


@dataclass(frozen=True, slots=True)
class ResolvedToken:
    """A token and where it was found (``$SAND_TOKEN``, a file's path), for messages."""

    token: str = field(repr=False)
    source: str


def looks_like_token(text: str) -> bool:
    """Whether ``text`` has the form of a SAND token: ``sand_`` and 43 base64url characters."""
    return TOKEN_FORMAT.fullmatch(text) is not None


def canonical_url(url: str) -> str:
    """The key of an API base URL: scheme and host in lower case, ``localhost`` as
    ``127.0.0.1``, no trailing slash — so ``http://localhost:18080/`` and the cluster's
    ``http://127.0.0.1:18080`` are the same entry."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    if host == "localhost":
        host = "127.0.0.1"
    try:
        netloc = host if parts.port is None else f"{host}:{parts.port}"
    except ValueError:  # not a port number: keep the URL as given, it will not connect anyway
        return url.strip().rstrip("/")
    return urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/"), "", ""))


def credentials_path(env: Mapping[str, str] | None = None) -> Path:
    """``${XDG_CONFIG_HOME:-~/.config}/sand/credentials.json``."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "sand" / "credentials.json"


def read_credentials(path: Path) -> dict[str, Credential]:
    """Every saved sign-in, by canonical URL; empty when the file does not exist.

    Raises ``CredentialsError`` when it exists but is not a JSON object of sign-ins."""
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise CredentialsError(f"cannot read the credentials file {path}: {exc}") from exc
    if not isinstance(document, dict):
        raise CredentialsError(f"the credentials file {path} is not a JSON object")
    found: dict[str, Credential] = {}
    for url, entry in document.items():
        token = entry.get("token") if isinstance(entry, dict) else None
        if isinstance(token, str) and token:
            user = entry.get("user")
            found[canonical_url(url)] = Credential(token, user if isinstance(user, str) else None)
    return found


def save_credential(url: str, credential: Credential, path: Path) -> None:
    """Save (or replace) the sign-in for ``url``; the file is replaced atomically, mode 0600."""
    saved = read_credentials(path)
    saved[canonical_url(url)] = credential
    _write_credentials(path, saved)


def remove_credential(url: str, path: Path) -> bool:
    """Forget the sign-in for ``url``; False when there was none."""
    saved = read_credentials(path)
    if saved.pop(canonical_url(url), None) is None:
        return False
    _write_credentials(path, saved)
    return True


def _write_credentials(path: Path, saved: Mapping[str, Credential]) -> None:
    document = {
        url: {"token": c.token, **({"user": c.user} if c.user else {})} for url, c in saved.items()
    }
    try:
        write_private_file(path, json.dumps(document, indent=2) + "\n")
    except OSError as exc:
        raise CredentialsError(f"cannot write the credentials file {path}: {exc}") from exc


def write_private_file(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically, readable by its owner only (mode 0600).

    The parent directory is made (mode 0700) if missing. A reader sees the old file or the
    new one, never half of one, and the content is never readable by others, not even for
    a moment (the temporary file is created 0600). Raises ``OSError``."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as out:  # mkstemp creates the file with mode 0600
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise


def resolve_token(
    base_url: str,
    env: Mapping[str, str] | None = None,
    credentials_file: Path | None = None,
) -> ResolvedToken | None:
    """The token a client of ``base_url`` sends when given none, or None (see the module's
    doc for the order). Never raises: an unreadable source is skipped, and a request without
    a token is then answered 401 with a message saying how to sign in."""
    env = os.environ if env is None else env
    if env.get(TOKEN_ENV, "").strip():
        return ResolvedToken(env[TOKEN_ENV].strip(), f"${TOKEN_ENV}")
    path = credentials_file or credentials_path(env)
    try:
        saved = read_credentials(path).get(canonical_url(base_url))
    except CredentialsError:
        saved = None
    if saved is not None:
        return ResolvedToken(saved.token, str(path))
    return _local_admin_token(base_url, env)


def _local_admin_token(base_url: str, env: Mapping[str, str]) -> ResolvedToken | None:
    # imported here: a client of a remote cluster needs none of the cluster package
    from sand.cluster.config import ConfigError, load_config

    try:
        config = load_config(env=env)
    except (ConfigError, OSError):
        return None
    if canonical_url(config.gateway_url) != canonical_url(base_url):
        return None
    path = config.admin_token_file
    try:
        token = path.read_text().strip()
    except OSError:  # missing, or not ours to read: this machine's operator is someone else
        return None
    return ResolvedToken(token, str(path)) if token else None
