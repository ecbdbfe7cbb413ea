"""The client SDK: deploy, invoke and inspect applications over the HTTP API.

Every method blocks until the server answers and raises ``SandApiError`` for
an answer that is not a success, with the server's message. See
``frontend/openapi.yaml`` for the API itself.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

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
    """A thin client of one SAND gateway (nginx). Thread-safe for concurrent calls."""

    def __init__(self, base_url: str, *, timeout_s: float = 300.0) -> None:
        self._base = base_url.rstrip("/")
        self._timeout_s = timeout_s
        self._session = requests.Session()

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
            raise _error(response)
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
            raise _error(response)
        return response.json() if response.content else None


def _unreachable(base: str) -> SandApiError:
    return SandApiError(0, f"cannot reach SAND at {base} (is `sand up` running?)")


def _lines(response: requests.Response) -> Iterator[dict[str, Any]]:
    for raw in response.iter_lines():
        if raw:
            yield json.loads(raw)


def _error(response: requests.Response) -> SandApiError:
    try:
        body = response.json()
        message = body.get("error") or body.get("message") or response.text
        if body.get("problems"):
            message = "\n".join(map(str, body["problems"]))
    except ValueError:
        body, message = None, response.text.strip() or response.reason
    return SandApiError(response.status_code, f"HTTP {response.status_code}: {message}", body)
