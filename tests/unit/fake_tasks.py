"""The callback routes of the twin ``tests.unit.fake_sand`` (issue 23's contract,
/work/notes/callbacks-contract.md, "Public API"): ``POST /v1/tasks/{token}/success``,
``.../failure`` and ``.../heartbeat`` over a table of waits a test sets up. A token the
table does not hold is malformed (400); a wait of another user's app is 403; a wait that
is no longer WAITING is 409 naming its status; ``busy_retry_s`` answers 429 (a proxy's
refusal) to show how a client takes it. For unit tests only: the real rules (token
signatures, the LWT, the payload limit) live in the frontend and the host agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.unit.fake_executions import Reply

MAX_ERROR_CHARS = 256
MAX_CAUSE_CHARS = 32_768


@dataclass
class Wait:
    app: str
    status: str = "WAITING"
    outcome: dict[str, Any] | None = None
    beats: int = 0


@dataclass
class TaskStore:
    waits: dict[str, Wait] = field(default_factory=dict)  # token -> its wait
    busy_retry_s: int | None = None  # set: every call is refused with 429 and this Retry-After

    def add(self, token: str, app: str, status: str = "WAITING") -> Wait:
        wait = self.waits[token] = Wait(app, status)
        return wait

    def handle(
        self, method: str, rest: list[str], body: Any, user: str, role: str, owners: dict[str, str]
    ) -> Reply | None:
        """The answer to ``method /v1/tasks/<rest>``; ``owners``: app -> its owner."""
        if method != "POST" or len(rest) != 2:
            return None
        token, action = rest
        if self.busy_retry_s is not None:
            retry = str(self.busy_retry_s)
            return Reply(429, {"error": "the cluster is busy"}, {"Retry-After": retry})
        wait = self.waits.get(token)
        if wait is None:
            return Reply(400, {"error": "'token': not a task token of this cluster"})
        if role != "admin" and owners.get(wait.app) != user:
            return Reply(403, {"error": f"the task token is of application '{wait.app}'"})
        if wait.status != "WAITING":
            return Reply(409, {"error": f"the task is no longer waiting: already {wait.status}"})
        if action == "heartbeat":
            wait.beats += 1
            return Reply(200, {"status": "WAITING"})
        if action == "success":
            return self._end(wait, "SUCCEEDED", body)
        if action == "failure":
            return self._end(wait, "FAILED", body)
        return None

    def _end(self, wait: Wait, status: str, body: Any) -> Reply:
        problem = _problem(status, body)
        if problem is not None:
            return Reply(400, {"error": problem})
        wait.status, wait.outcome = status, dict(body)
        return Reply(200, {"status": status})


def _problem(status: str, body: Any) -> str | None:
    """What is wrong with a success or failure body, naming the field; None when it is fine."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    if status == "SUCCEEDED":
        return None if "output" in body else "'output': is required"
    for name, most in (("error", MAX_ERROR_CHARS), ("cause", MAX_CAUSE_CHARS)):
        value = body.get(name)
        if value is not None and (not isinstance(value, str) or len(value) > most):
            return f"'{name}': must be a string of at most {most} characters"
    return None
