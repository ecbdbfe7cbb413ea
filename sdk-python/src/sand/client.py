"""The client SDK: deploy, invoke and inspect applications, manage users and tokens over
the HTTP API.

Every call carries ``Authorization: Bearer <token>``: the token given, or the one
:func:`sand.credentials.resolve_token` finds ($SAND_TOKEN, the file `sand login` writes,
this machine's cluster's admin token). Every method blocks until the server answers and
raises ``SandApiError`` for an answer that is not a success, with the server's message and,
for 401 and 403, what to do about it. See ``frontend/openapi.yaml`` for the API itself.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import requests
import requests.auth

from sand.credentials import INTERNAL_HEADER, TOKEN_ENV, resolve_token

_SKIP = {"__pycache__", ".git", ".venv", ".pytest_cache", ".mypy_cache"}


class SandApiError(Exception):
    """The API refused a request; ``status`` is the HTTP status, ``body`` its JSON."""

    def __init__(self, status: int, message: str, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


@dataclass(frozen=True, slots=True)
class Execution:
    """An execution's state: ``output`` when SUCCEEDED, ``error``/``cause`` when FAILED."""

    execution_id: str
    status: str  # a sand.contracts.ExecutionStatus value, or "UNKNOWN"
    output: Any = None
    error: str | None = None
    cause: str | None = None

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Execution:
        return cls(
            execution_id=str(doc.get("execution_id", "")),
            status=str(doc.get("status", "UNKNOWN")),
            output=doc.get("output"),
            error=doc.get("error"),
            cause=doc.get("cause"),
        )


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the server takes the caller for (``GET /v1/whoami``)."""

    user: str
    role: str  # "user" or "admin"
    token_id: str

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Identity:
        return cls(str(doc["user"]), str(doc["role"]), str(doc.get("token_id", "")))


@dataclass(frozen=True, slots=True)
class User:
    name: str
    role: str  # "user" or "admin"
    created: str | None  # ISO-8601

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> User:
        return cls(str(doc["name"]), str(doc["role"]), doc.get("created"))


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """A token as listed: everything but the token itself, which the server keeps hashed."""

    id: str
    user: str
    label: str | None
    created: str | None  # ISO-8601
    expires: str | None  # ISO-8601; None: never

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> TokenInfo:
        return cls(
            id=str(doc["id"]),
            user=str(doc["user"]),
            label=doc.get("label"),
            created=doc.get("created"),
            expires=doc.get("expires"),
        )


@dataclass(frozen=True, slots=True)
class NewToken:
    """A token just created: ``token`` is its only appearance (left out of ``repr``)."""

    info: TokenInfo
    token: str = field(repr=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> NewToken:
        return cls(TokenInfo.from_json(doc), str(doc["token"]))


def pack_app(app_dir: Path) -> bytes:
    """The application directory as an uncompressed tar (what ``POST /v1/apps`` takes)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(app_dir.rglob("*")):
            relative = path.relative_to(app_dir)
            if any(part in _SKIP for part in relative.parts) or path.suffix == ".pyc":
                continue
            tar.add(path, arcname=str(relative), recursive=False)
    return buffer.getvalue()


class SandClient:
    """A thin client of one SAND gateway (nginx). Thread-safe for concurrent calls.

    ``token``: the bearer token to send; None resolves one (``resolve_token``), and sends
    none if nothing is found (the server then answers 401). ``internal_secret``: talk to a
    host agent directly, as SAND's own services do (``X-Sand-Internal``; the agent then acts
    as the system, an admin) — no token is sent or resolved."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout_s: float = 300.0,
        internal_secret: str | None = None,
    ) -> None:
        self._base = base_url.rstrip("/")
        self._timeout_s = timeout_s
        self._session = requests.Session()
        self._token_source: str | None = None  # where a resolved token was found
        self._has_token = False
        self._internal = internal_secret is not None
        if internal_secret is not None:
            self._session.headers[INTERNAL_HEADER] = internal_secret
            return
        if token is None:
            resolved = resolve_token(self._base)
            if resolved is not None:
                token, self._token_source = resolved.token, resolved.source
        if token:
            self._has_token = True
            self._session.auth = _Bearer(token)

    @property
    def base_url(self) -> str:
        return self._base

    @property
    def token_source(self) -> str | None:
        """Where the token sent was found (``$SAND_TOKEN``, a file's path); None when it was
        given to the constructor, or there is none."""
        return self._token_source

    def deploy(
        self,
        app_dir: Path,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
        *,
        backend: str | None = None,
        backups: bool = True,
        remote_grains: tuple[str, ...] = (),
        placement: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Upload and deploy; calls ``on_progress`` with each progress line; returns the app.

        ``backend`` (``docker`` or ``process``) overrides the cluster's default sandbox backend.
        ``backups=False`` deploys without the copies of every event for the global bus (only
        to measure what they cost: such an app loses replay after a sandbox dies).
        ``placement`` (``{"hosts": [...], "grains": {grain: [...]}}``) replaces the one in
        ``app.yaml`` (decision 0013)."""
        params = {"backend": backend} if backend else {}
        if not backups:
            params["backups"] = "off"
        if remote_grains:
            # events for these grains take the cross-host path (Kafka) even on one host
            params["remote_grains"] = ",".join(remote_grains)
        if placement is not None:
            params["placement"] = json.dumps(placement)
        try:
            response = self._session.post(
                f"{self._base}/v1/apps",
                params=params or None,
                data=pack_app(app_dir),
                headers={"Content-Type": "application/x-tar"},
                stream=True,
                timeout=self._timeout_s,
            )
        except requests.ConnectionError as exc:
            raise _unreachable(self._base) from exc
        if response.status_code >= 400 and "ndjson" not in response.headers.get("Content-Type", ""):
            raise self._error(response)
        last: dict[str, Any] = {}
        for line in _lines(response):
            last = line
            if on_progress is not None:
                on_progress(line)
        if last.get("status") != "deployed":
            problems = last.get("problems") or [last.get("error", "deploy failed")]
            raise SandApiError(response.status_code, "\n".join(map(str, problems)), last)
        app: dict[str, Any] = last["app"]
        return app

    def undeploy(self, app: str) -> None:
        self._json("DELETE", f"/v1/apps/{app}")

    def apps(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._json("GET", "/v1/apps")["apps"]
        return result

    def app(self, app: str) -> dict[str, Any]:
        result: dict[str, Any] = self._json("GET", f"/v1/apps/{app}")
        return result

    def logs(self, app: str, tail: int = 200) -> str:
        return str(self._json("GET", f"/v1/apps/{app}/logs?tail={tail}")["logs"])

    def invoke(
        self,
        app: str,
        payload: Any,
        *,
        workflow: str | None = None,
        wait: bool = True,
        via: str | None = None,
    ) -> Execution:
        """Run a workflow: wait for its result (``wait``) or return at once with its id.

        ``via="kafka"`` enters through the entry grain's Kafka topic instead of the local
        bus (the paper's external path; slower, kept for comparison)."""
        params = {"mode": "sync" if wait else "async"}
        if via:
            params["via"] = via
        if workflow:
            params["workflow"] = workflow
        doc = self._json("POST", f"/v1/apps/{app}/invoke", params=params, body=payload)
        return Execution.from_json(doc)

    def result(self, execution_id: str) -> Execution:
        return Execution.from_json(self._json("GET", f"/v1/executions/{execution_id}"))

    # -- identity, users and tokens ---------------------------------------------------------

    def whoami(self) -> Identity:
        """The user and role of the token sent (``GET /v1/whoami``)."""
        return Identity.from_json(self._json("GET", "/v1/whoami"))

    def users(self) -> list[User]:
        """Every user (admin only)."""
        return [User.from_json(doc) for doc in self._json("GET", "/v1/users")["users"]]

    def create_user(self, name: str, *, role: str = "user") -> User:
        """Add a user (admin only); ``role`` is ``user`` or ``admin``. 409 if it exists."""
        return User.from_json(self._json("POST", "/v1/users", body={"name": name, "role": role}))

    def delete_user(self, name: str) -> int:
        """Remove a user (admin only) and revoke its tokens at once; returns how many were
        revoked. Its applications stay deployed, owned by the name."""
        doc = self._json("DELETE", f"/v1/users/{_segment(name)}")
        return int(doc.get("tokens_revoked", 0))

    def tokens(self, user: str | None = None) -> list[TokenInfo]:
        """The caller's tokens, or ``user``'s (another user's needs admin)."""
        params = {"user": user} if user else None
        listed = self._json("GET", "/v1/tokens", params=params)["tokens"]
        return [TokenInfo.from_json(doc) for doc in listed]

    def create_token(
        self,
        *,
        user: str | None = None,
        label: str | None = None,
        expires_in_days: int | None = None,
    ) -> NewToken:
        """A new token for the caller, or for ``user`` (admin only). Its plaintext is in the
        answer only: the server keeps a hash."""
        body: dict[str, Any] = {}
        if user is not None:
            body["user"] = user
        if label is not None:
            body["label"] = label
        if expires_in_days is not None:
            body["expires_in_days"] = expires_in_days
        return NewToken.from_json(self._json("POST", "/v1/tokens", body=body))

    def revoke_token(self, token_id: str) -> None:
        """Revoke one of the caller's tokens (an admin: anyone's); it stops working at once."""
        self._json("DELETE", f"/v1/tokens/{_segment(token_id)}")

    def _json(
        self, method: str, path: str, *, params: dict[str, str] | None = None, body: Any = None
    ) -> Any:
        data = None if body is None and method != "POST" else json.dumps(body).encode()
        try:
            response = self._session.request(
                method,
                self._base + path,
                params=params,
                data=data,
                headers={"Content-Type": "application/json"},
                timeout=self._timeout_s,
            )
        except requests.ConnectionError as exc:
            raise _unreachable(self._base) from exc
        if response.status_code >= 400:
            raise self._error(response)
        return response.json() if response.content else None

    def _error(self, response: requests.Response) -> SandApiError:
        """The server's refusal, saying what to do when it is about who is calling."""
        error = _error(response)
        if self._internal:  # SAND's own call: signing in is not the answer
            return error
        server = _server_message(error.body) or "refused"
        if response.status_code == 401:
            if not self._has_token:
                message = (
                    f"not signed in to {self._base}: run `sand login` or set {TOKEN_ENV} ({server})"
                )
            else:
                source = f" (from {self._token_source})" if self._token_source else ""
                message = (
                    f"the token{source} was refused (unknown, revoked or expired): "
                    "run `sand login` again"
                )
            return SandApiError(401, message, error.body)
        if response.status_code == 403:
            return SandApiError(
                403, f"not allowed: {server} (this needs an admin's token)", error.body
            )
        return error


def _unreachable(base: str) -> SandApiError:
    return SandApiError(0, f"cannot reach SAND at {base} (is `sand up` running?)")


def _lines(response: requests.Response) -> Iterator[dict[str, Any]]:
    for raw in response.iter_lines():
        if raw:
            yield json.loads(raw)


class _Bearer(requests.auth.AuthBase):
    """Sets ``Authorization: Bearer``. As the session's ``auth`` (not a default header) it
    is not replaced by a ``~/.netrc`` entry for the host, which requests would apply."""

    def __init__(self, token: str) -> None:
        self._token = token

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self._token}"
        return request

    def __repr__(self) -> str:
        return "_Bearer(<token>)"


def _segment(value: str) -> str:
    """``value`` as one path segment: a name with a ``/`` cannot reach another route."""
    return quote(value, safe="")


def _server_message(body: Any) -> str | None:
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    return None


def _error(response: requests.Response) -> SandApiError:
    try:
        body = response.json()
        message = body.get("error") or body.get("message") or response.text
        if body.get("problems"):
            message = "\n".join(map(str, body["problems"]))
    except ValueError:
        body, message = None, response.text.strip() or response.reason
    return SandApiError(response.status_code, f"HTTP {response.status_code}: {message}", body)
