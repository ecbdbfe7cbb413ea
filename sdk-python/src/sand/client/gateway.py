"""``SandClient``: every operation of ``frontend/openapi.yaml`` as a blocking method.

Every call carries ``Authorization: Bearer <token>``: the token given, or the one
:func:`sand.credentials.resolve_token` finds ($SAND_TOKEN, the file `sand login` writes,
this machine's cluster's admin token). Every method blocks until the server answers and
raises a :class:`~sand.client.errors.SandApiError` subclass for an answer that is not a
success (``NotFound``, ``Conflict``, ...), with the server's message and, for 401 and 403,
what to do about it. Which method serves which operation is ``sand.client.operations``.
"""

from __future__ import annotations

import io
import json
import random
import tarfile
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import requests
import requests.auth

from sand.client.errors import Busy, SandApiError, Unreachable, error_for
from sand.client.models import (
    AppInfo,
    Execution,
    ExecutionPage,
    ExecutionSummary,
    Health,
    HistoryEvent,
    HistoryPage,
    Identity,
    NewToken,
    TokenInfo,
    TriggerInfo,
    User,
)
from sand.credentials import INTERNAL_HEADER, TOKEN_ENV, resolve_token

_SKIP = {"__pycache__", ".git", ".venv", ".pytest_cache", ".mypy_cache"}

# Response headers of invoke (decision 0004, issue 13's idempotent start).
EXECUTION_ID_HEADER = "X-Sand-Execution-Id"
EXISTING_HEADER = "X-Sand-Existing"


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
    as the system, an admin) — no token is sent or resolved. ``busy_wait_s``: how long in
    all a request refused with 429 (``Busy``: nothing was queued, so trying again is always
    safe) is tried again, each time after its ``Retry-After`` plus up to half of it at
    random, so that refused callers do not come back together; 0 raises ``Busy`` at once."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout_s: float = 300.0,
        internal_secret: str | None = None,
        busy_wait_s: float = 0.0,
    ) -> None:
        self._base = base_url.rstrip("/")
        self._timeout_s = timeout_s
        self._busy_wait_s = busy_wait_s
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

    # -- health ------------------------------------------------------------------------------

    def health(self) -> Health:
        """The answering frontend's liveness; a 503 (Redis unreachable) is returned, not
        raised: ``status`` is then ``unavailable`` and ``error`` says why."""
        response = self._send("GET", "/health")
        if response.status_code not in (200, 503):
            raise self._error(response)
        return Health.from_json(response.json())

    def healthy(self) -> bool:
        """``HEAD /health``: True when the frontend serves and reaches Redis."""
        return self._send("HEAD", "/health").status_code == 200

    def metrics(self) -> str:
        """``GET /metrics``: the answering frontend's Prometheus metrics, as text (an
        admin's token; decision 0019)."""
        response = self._send("GET", "/metrics")
        if response.status_code != 200:
            raise self._error(response)
        return response.text

    # -- applications --------------------------------------------------------------------------

    def deploy(
        self,
        app_dir: Path,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
        *,
        backend: str | None = None,
        backups: bool = True,
        remote_grains: tuple[str, ...] = (),
        placement: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Upload and deploy; calls ``on_progress`` with each progress line; returns the app's
        document (``AppInfo.from_json`` types it).

        ``dry_run=True`` only validates, with the deploy's own rules: it starts and changes
        nothing, and returns the description a deploy would store (no version); an invalid
        app raises exactly as its deploy would.

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
        if dry_run:
            params["dry_run"] = "true"
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
        if dry_run:
            valid: dict[str, Any] = response.json()["app"]
            return valid
        last: dict[str, Any] = {}
        for line in _lines(response):
            last = line
            if on_progress is not None:
                on_progress(line)
        if last.get("status") != "deployed":
            problems = last.get("problems") or [last.get("error", "deploy failed")]
            status = int(last.get("http_status") or response.status_code)
            raise error_for(status, "\n".join(map(str, problems)), last)
        app: dict[str, Any] = last["app"]
        return app

    def workflow(self, app: str, workflow: str) -> dict[str, Any]:
        """A deployed workflow's definition: ``kind`` (``asl`` or ``native``), ``definition``
        (parsed) and ``source`` (the file's text); ``NotFound`` for an unknown app or workflow."""
        result: dict[str, Any] = self._json(
            "GET", f"/v1/apps/{_segment(app)}/workflows/{_segment(workflow)}"
        )
        return result

    def cluster(self) -> dict[str, Any]:
        """Every host with its health, its sandboxes of the caller's apps (an admin: all) and
        their grain workers (``{"hosts": [...]}``)."""
        result: dict[str, Any] = self._json("GET", "/v1/cluster")
        return result

    def undeploy(self, app: str) -> None:
        self._json("DELETE", f"/v1/apps/{_segment(app)}")

    def apps(self) -> list[dict[str, Any]]:
        """The deployed applications' documents as the agent sent them (``list_apps`` types
        them)."""
        result: list[dict[str, Any]] = self._json("GET", "/v1/apps")["apps"]
        return result

    def list_apps(self) -> list[AppInfo]:
        """The deployed applications the caller may see."""
        return [AppInfo.from_json(doc) for doc in self.apps()]

    def app(self, app: str) -> dict[str, Any]:
        """One application's document as the agent sent it (``describe`` types it)."""
        result: dict[str, Any] = self._json("GET", f"/v1/apps/{_segment(app)}")
        return result

    def describe(self, app: str) -> AppInfo:
        """One application's metadata; ``NotFound`` when it is not deployed (or not yours)."""
        return AppInfo.from_json(self.app(app))

    def logs(self, app: str, tail: int = 200) -> str:
        return str(
            self._json("GET", f"/v1/apps/{_segment(app)}/logs", params={"tail": tail})["logs"]
        )

    # -- triggers (decision 0034) ------------------------------------------------------------

    def triggers(self, app: str) -> list[TriggerInfo]:
        """The application's triggers with their state (paused, next and last firing, a topic's
        lag); ``NotFound`` when the app is not deployed (or not yours)."""
        listed = self._json("GET", f"/v1/apps/{_segment(app)}/triggers")["triggers"]
        return [TriggerInfo.from_json(doc) for doc in listed]

    def pause_trigger(self, app: str, name: str) -> TriggerInfo:
        """Stop the trigger ``name`` from starting executions until it is resumed (firings while
        paused are never run); pausing a paused trigger is no error. ``NotFound`` names the
        app's triggers when it has no such one."""
        return self._trigger_action(app, name, "pause")

    def resume_trigger(self, app: str, name: str) -> TriggerInfo:
        """Let a paused trigger start executions again: a schedule from its next firing (those
        missed while paused are never run). ``NotFound`` as for ``pause_trigger``."""
        return self._trigger_action(app, name, "resume")

    def _trigger_action(self, app: str, name: str, action: str) -> TriggerInfo:
        path = f"/v1/apps/{_segment(app)}/triggers/{_segment(name)}/{action}"
        return TriggerInfo.from_json(self._json("POST", path, body={}))

    # -- executions ----------------------------------------------------------------------------

    def invoke(
        self,
        app: str,
        payload: Any,
        *,
        workflow: str | None = None,
        wait: bool = True,
        via: str | None = None,
        name: str | None = None,
        trace: bool = False,
        timeout_s: int | None = None,
    ) -> Execution:
        """Run a workflow: wait for its result (``wait``) or return at once with its id.

        ``name`` makes the start idempotent: a second start of ``app`` with the same name and
        input returns the first one's execution (``existing`` True); with another input it
        raises ``Conflict``. ``trace`` records per-grain spans (``Execution.trace``).
        ``timeout_s``: how long a waiting call waits before it answers RUNNING.
        ``via="kafka"`` enters through the entry grain's Kafka topic instead of the local
        bus (the paper's external path; slower, kept for comparison)."""
        params: dict[str, Any] = {"mode": "sync" if wait else "async"}
        if via:
            params["via"] = via
        if workflow:
            params["workflow"] = workflow
        if name is not None:
            params["name"] = name
        if trace:
            params["trace"] = "1"
        if timeout_s is not None:
            params["timeout_s"] = timeout_s
        response = self._send(
            "POST", f"/v1/apps/{_segment(app)}/invoke", params=params, body=payload
        )
        existing = response.headers.get(EXISTING_HEADER) == "1"
        return Execution.from_json(_body(response), existing=existing)

    def execution(self, execution_id: str) -> Execution:
        """The execution's document: status, input, output or error and cause, times.
        ``NotFound`` names the id when there is none (or it is another user's)."""
        return Execution.from_json(self._json("GET", f"/v1/executions/{_segment(execution_id)}"))

    def result(self, execution_id: str) -> Execution:
        """The same as ``execution`` (its older name)."""
        return self.execution(execution_id)

    def executions(
        self,
        *,
        app: str | None = None,
        status: str | None = None,
        since: int | str | datetime | None = None,
        limit: int | None = None,
        page: str | None = None,
    ) -> ExecutionPage:
        """One page of executions, newest first, of the caller's apps (an admin: all).

        ``status``: RUNNING, SUCCEEDED, FAILED or ABORTED; ``since``: epoch ms, an RFC 3339
        string, or an aware ``datetime``; ``limit``: 1..1000 (server default 100); ``page``:
        the previous page's ``next_page``. A bad value raises ``BadRequest`` naming it."""
        params: dict[str, Any] = {}
        for key, value in (("app", app), ("status", status), ("limit", limit), ("page", page)):
            if value is not None:
                params[key] = value
        if since is not None:
            params["since"] = _since(since)
        return ExecutionPage.from_json(self._json("GET", "/v1/executions", params=params))

    def all_executions(
        self,
        *,
        app: str | None = None,
        status: str | None = None,
        since: int | str | datetime | None = None,
        limit: int | None = None,
    ) -> Iterator[ExecutionSummary]:
        """Every execution ``executions`` would list, page after page (``limit`` per page),
        fetched lazily as the iterator is consumed."""
        page: str | None = None
        while True:
            listed = self.executions(app=app, status=status, since=since, limit=limit, page=page)
            yield from listed.executions
            if not listed.next_page:
                return
            page = listed.next_page

    def history(
        self, execution_id: str, *, limit: int | None = None, page: str | None = None
    ) -> HistoryPage:
        """One page of the execution's recorded events, in order (server default 200, at
        most 1000 per page)."""
        params: dict[str, Any] = {}
        if limit is not None:
            params["limit"] = limit
        if page is not None:
            params["page"] = page
        path = f"/v1/executions/{_segment(execution_id)}/history"
        return HistoryPage.from_json(self._json("GET", path, params=params))

    def all_history(self, execution_id: str, *, limit: int | None = None) -> Iterator[HistoryEvent]:
        """Every recorded event of the execution, page after page, lazily."""
        page: str | None = None
        while True:
            listed = self.history(execution_id, limit=limit, page=page)
            yield from listed.events
            if not listed.next_page:
                return
            page = listed.next_page

    def stop(
        self, execution_id: str, *, error: str | None = None, cause: str | None = None
    ) -> Execution:
        """End a running execution as ABORTED (its running grains are killed); the server
        defaults ``error`` to ``States.Aborted`` and ``cause`` to "stopped by <user>".
        ``Conflict`` when it has already finished (the message names its status)."""
        body = {k: v for k, v in (("error", error), ("cause", cause)) if v is not None}
        return Execution.from_json(
            self._json("POST", f"/v1/executions/{_segment(execution_id)}/stop", body=body)
        )

    def redrive(self, execution_id: str) -> Execution:
        """Run a FAILED or ABORTED execution again from the state that failed, keeping what
        succeeded; returns it RUNNING with ``redrive_count`` raised. ``Conflict`` when it
        did not fail, or no history was recorded for it (the message says which)."""
        path = f"/v1/executions/{_segment(execution_id)}/redrive"
        return Execution.from_json(self._json("POST", path, body={}))

    # -- callbacks (a Task's `.waitForTaskToken`, issue 23) -------------------------------------

    def send_task_success(self, token: str, output: Any) -> str:
        """End the Task waiting on ``token`` with ``output`` (any JSON value) as its result;
        its state then goes on (ResultSelector, ResultPath, Next). Returns the status the
        wait now has (``SUCCEEDED``). ``Conflict`` when the task no longer waits (its message
        says why: already SUCCEEDED or FAILED, or timed out); ``BadRequest`` for a malformed
        token; ``Forbidden`` when the token is of an app that is not the caller's;
        ``PayloadTooLarge`` when ``output`` is over the app's payload limit."""
        return self._task_callback(token, "success", {"output": output})

    def send_task_failure(
        self, token: str, *, error: str | None = None, cause: str | None = None
    ) -> str:
        """Fail the Task waiting on ``token`` with ``error`` and ``cause`` (its Retry and
        Catch apply as to any task error); returns ``FAILED``. Raises as
        ``send_task_success``."""
        body = {k: v for k, v in (("error", error), ("cause", cause)) if v is not None}
        return self._task_callback(token, "failure", body)

    def send_task_heartbeat(self, token: str) -> str:
        """Tell the Task waiting on ``token`` that its work goes on: its HeartbeatSeconds
        clock starts again (its TimeoutSeconds does not). Returns ``WAITING``; ``Conflict``
        when the task no longer waits."""
        return self._task_callback(token, "heartbeat", {})

    def _task_callback(self, token: str, action: str, body: dict[str, Any]) -> str:
        """POST ``/v1/tasks/{token}/{action}``; the status of the answer."""
        answer = self._json("POST", f"/v1/tasks/{_segment(token)}/{action}", body=body)
        return str(answer["status"])

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

    # -- the wire ----------------------------------------------------------------------------

    def _json(
        self, method: str, path: str, *, params: dict[str, Any] | None = None, body: Any = None
    ) -> Any:
        return _body(self._send(method, path, params=params, body=body))

    def _send(
        self, method: str, path: str, *, params: dict[str, Any] | None = None, body: Any = None
    ) -> requests.Response:
        """The answer to one request; raises for a refusal (status >= 400, except a health
        check's 503, which ``health`` reads) or when the gateway cannot be reached."""
        data = None if body is None and method != "POST" else json.dumps(body).encode()
        give_up_at = time.monotonic() + self._busy_wait_s
        while True:
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
            if response.status_code == 503 and path == "/health":
                return response
            if response.status_code < 400:
                return response
            error = self._error(response)
            if not isinstance(error, Busy):
                raise error
            after = 1 if error.retry_after_s is None else max(error.retry_after_s, 0.1)
            pause = after * (1 + random.random() / 2)
            if time.monotonic() + pause > give_up_at:
                raise error
            time.sleep(pause)

    def _error(self, response: requests.Response) -> SandApiError:
        """The server's refusal, saying what to do when it is about who is calling."""
        error = _error(response)
        if self._internal:  # SAND's own call: signing in is not the answer
            return error
        server = error.server_message or "refused"
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
            return error_for(401, message, error.body)
        if response.status_code == 403:
            return error_for(
                403, f"not allowed: {server} (this needs an admin's token)", error.body
            )
        return error


def _body(response: requests.Response) -> Any:
    return response.json() if response.content else None


def _since(since: int | str | datetime) -> str:
    """``since`` as the API takes it: epoch ms, or RFC 3339."""
    if isinstance(since, datetime):
        if since.tzinfo is None:
            raise ValueError(f"since: a datetime needs a time zone (RFC 3339), got {since!r}")
        return since.isoformat()
    return str(since)


def _unreachable(base: str) -> SandApiError:
    return Unreachable(0, f"cannot reach SAND at {base} (is `sand up` running?)")


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


def _error(response: requests.Response) -> SandApiError:
    try:
        body = response.json()
        message = body.get("error") or body.get("message") or response.text
        if body.get("problems"):
            message = "\n".join(map(str, body["problems"]))
    except (ValueError, AttributeError):
        body, message = None, response.text.strip() or response.reason
    error = error_for(response.status_code, f"HTTP {response.status_code}: {message}", body)
    if isinstance(error, Busy) and error.retry_after_s is None:
        error.retry_after_s = _retry_after(response.headers.get("Retry-After"))
    return error


def _retry_after(value: str | None) -> int | None:
    """``Retry-After`` in seconds; None when absent or not a number of seconds (an HTTP date
    is allowed by RFC 9110, but SAND sends seconds)."""
    if value is None or not value.strip().isdigit():
        return None
    return int(value.strip())
