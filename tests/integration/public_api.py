"""The public HTTP API as a client sees it (status codes and bodies, nothing hidden), for the
integration tests that drive executions: start one, read its document, wait for its end."""

from __future__ import annotations

import time
from typing import Any

import requests


class PublicApi:
    """Calls the gateway at ``base`` with the bearer ``token``."""

    def __init__(self, base: str, token: str, app: str) -> None:
        self.base = base
        self.bearer = token
        self.app = app
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return self.session.request(method, self.base + path, timeout=120, **kwargs)

    def start_async(self, body: Any, workflow: str | None = None) -> str:
        """Invoke the app asynchronously; the execution's id (202 asserted)."""
        params = {"mode": "async", **({"workflow": workflow} if workflow else {})}
        answer = self.call("POST", f"/v1/apps/{self.app}/invoke", params=params, json=body)
        assert answer.status_code == 202, answer.text
        return str(answer.json()["execution_id"])

    def status(self, execution_id: str) -> dict[str, Any]:
        answer = self.call("GET", f"/v1/executions/{execution_id}")
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def wait(self, execution_id: str, timeout_s: float = 60) -> dict[str, Any]:
        """The execution's document once it is no longer RUNNING."""
        give_up = time.monotonic() + timeout_s
        while time.monotonic() < give_up:
            doc = self.status(execution_id)
            if doc["status"] != "RUNNING":
                return doc
            time.sleep(0.2)
        raise AssertionError(f"execution {execution_id} still RUNNING after {timeout_s} s")
