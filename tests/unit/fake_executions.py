"""The executions part of the twin ``tests.unit.fake_sand`` (issue 13's contract, as
/work/briefs api.md puts it): apps with owners, execution documents and their history,
``GET /v1/executions`` (filters, opaque pages, newest first), ``GET /v1/executions/{id}``,
``.../history`` (pages), ``POST .../stop`` and ``.../redrive`` with their 404 and 409
answers, ``GET /v1/apps/{app}`` and ``POST /v1/apps/{app}/invoke`` (echoes its input;
``name=`` makes it idempotent). A user sees the executions of the apps they own; an admin all.
For unit tests only: the real rules live in the frontend.
"""

from __future__ import annotations

import base64
import re
import secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "ABORTED")
EXECUTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
NOW_MS = 1_767_225_600_000  # the twin's clock: every start is at or after it


@dataclass(frozen=True)
class Reply:
    status: int
    doc: Any
    headers: dict[str, str] = field(default_factory=dict)


def _page_token(offset: int) -> str:
    return base64.urlsafe_b64encode(f"at:{offset}".encode()).decode()


def _offset(token: str | None) -> int | None:
    """The offset a page token stands for; None when it is not one of ours."""
    if token is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(token.encode()).decode()
    except ValueError:
        return None
    return int(text[3:]) if text.startswith("at:") and text[3:].isdigit() else None


def _bad(parameter: str, rule: str, value: Any) -> Reply:
    return Reply(400, {"error": f"'{parameter}': {rule}, got {value!r}"})


def _limit(query: dict[str, str], default: int, most: int) -> int | Reply:
    raw = query.get("limit")
    if raw is None:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= most:
        return _bad("limit", f"must be an integer from 1 to {most}", raw)
    return int(raw)


@dataclass
class ExecutionStore:
    apps: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> app document
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> execution document
    events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # id -> history
    names: dict[tuple[str, str], str] = field(default_factory=dict)  # (app, name) -> id
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- set-up by a test --------------------------------------------------------------------

    def add_app(self, name: str, owner: str, workflows: tuple[str, ...] = ("main",)) -> None:
        self.apps[name] = {
            "name": name,
            "owner": owner,
            "version": 1,
            "default_workflow": workflows[0],
            "workflows": {w: {"entry_grain": "first"} for w in workflows},
            "grains": ["first"],
            "limits": {"timeout_s": 30, "memory_mb": 256, "max_concurrency": 8, "payload_kb": 256},
            "placement": {"hosts": ["host-1"], "grains": {"first": ["host-1"]}},
            "state": "running",
        }

    def add(self, doc: dict[str, Any], history: list[dict[str, Any]] | None = None) -> str:
        """Record an execution document (``execution_id`` made when missing) and its events."""
        execution_id = doc.setdefault("execution_id", secrets.token_hex(16))
        doc.setdefault("workflow", "main")
        doc.setdefault("started_ms", NOW_MS + len(self.docs))
        self.docs[execution_id] = doc
        self.events[execution_id] = [
            {"execution_id": execution_id, "state": None, "path": "", **e} for e in history or []
        ]
        return execution_id

    # -- the routes ----------------------------------------------------------------------------

    def apps_of(self, user: str, role: str) -> list[dict[str, Any]]:
        return [a for a in self.apps.values() if role == "admin" or a["owner"] == user]

    def handle(
        self,
        method: str,
        collection: str,
        rest: list[str],
        query: dict[str, str],
        body: Any,
        user: str,
        role: str,
    ) -> Reply | None:
        with self._lock:
            if collection == "apps":
                return self._apps(method, rest, query, body, user, role)
            if method == "GET" and not rest:
                return self._list(query, user, role)
            if not rest:
                return None
            doc = self.docs.get(rest[0])
            if doc is None or not self._visible(doc, user, role):
                return Reply(404, {"error": f"no execution '{rest[0]}' is recorded"})
            action = (method, *rest[1:])
            if action == ("GET",):
                return Reply(200, doc)
            if action == ("GET", "history"):
                return self._history(doc, query)
            if action == ("POST", "stop"):
                return self._stop(doc, body or {}, user)
            if action == ("POST", "redrive"):
                return self._redrive(doc)
            return None

    def _visible(self, doc: dict[str, Any], user: str, role: str) -> bool:
        app = self.apps.get(doc.get("app", ""))
        return role == "admin" or (app is not None and app["owner"] == user)

    def _apps(
        self, method: str, rest: list[str], query: dict[str, str], body: Any, user: str, role: str
    ) -> Reply | None:
        app = self.apps.get(rest[0]) if rest else None
        if app is None or (role != "admin" and app["owner"] != user):
            return Reply(404, {"error": f"no application '{rest[0] if rest else ''}' is deployed"})
        if method == "GET" and len(rest) == 1:
            return Reply(200, app)
        if method == "POST" and rest[1:] == ["invoke"]:
            return self._invoke(app, query, {} if body is None else body)
        return None

    def _invoke(self, app: dict[str, Any], query: dict[str, str], payload: Any) -> Reply:
        name = query.get("name")
        if name is not None and not EXECUTION_NAME.fullmatch(name):
            return _bad("name", f"must match {EXECUTION_NAME.pattern}", name)
        workflow = query.get("workflow", app["default_workflow"])
        if workflow not in app["workflows"]:
            return Reply(
                404, {"error": f"application '{app['name']}' has no workflow '{workflow}'"}
            )
        if name is not None and (app["name"], name) in self.names:
            existing = self.docs[self.names[(app["name"], name)]]
            if existing.get("input") != payload:
                return Reply(
                    409, {"error": f"the execution name '{name}' was used with another input"}
                )
            headers = {"X-Sand-Execution-Id": existing["execution_id"], "X-Sand-Existing": "1"}
            return Reply(200 if existing["status"] != "RUNNING" else 202, existing, headers)
        done = query.get("mode", "sync") == "sync"
        doc: dict[str, Any] = {"app": app["name"], "workflow": workflow, "input": payload}
        doc.update({"status": "SUCCEEDED", "output": payload} if done else {"status": "RUNNING"})
        if name is not None:
            doc["name"] = name
        if query.get("trace") == "1":
            doc["trace"] = {"frontend_in": NOW_MS / 1000, "spans": []}
        execution_id = self.add(doc)
        if name is not None:
            self.names[(app["name"], name)] = execution_id
        return Reply(200 if done else 202, doc, {"X-Sand-Execution-Id": execution_id})

    def _list(self, query: dict[str, str], user: str, role: str) -> Reply:
        status = query.get("status")
        if status is not None and status not in STATUSES:
            return _bad("status", f"must be one of {', '.join(STATUSES)}", status)
        limit = _limit(query, 100, 1000)
        if isinstance(limit, Reply):
            return limit
        since = query.get("since")
        since_ms = 0
        if since is not None:
            if since.isdigit():
                since_ms = int(since)
            else:
                try:
                    since_ms = int(datetime.fromisoformat(since).timestamp() * 1000)
                except ValueError:
                    return _bad("since", "must be epoch milliseconds or RFC 3339", since)
        offset = _offset(query.get("page"))
        if offset is None:
            return _bad("page", "is not a page token of this listing", query.get("page"))
        rows = [
            d
            for d in self.docs.values()
            if self._visible(d, user, role)
            and query.get("app") in (None, d.get("app"))
            and status in (None, d["status"])
            and d["started_ms"] >= since_ms
        ]
        rows.sort(key=lambda d: d["started_ms"], reverse=True)
        page = rows[offset : offset + limit]
        summary = [
            "execution_id",
            "app",
            "workflow",
            "status",
            "name",
            "started_ms",
            "finished_ms",
            "error",
            "cause",
            "redrive_count",
        ]
        more = offset + limit < len(rows)
        return Reply(
            200,
            {
                "executions": [{k: d[k] for k in summary if k in d} for d in page],
                "next_page": _page_token(offset + limit) if more else None,
            },
        )

    def _history(self, doc: dict[str, Any], query: dict[str, str]) -> Reply:
        limit = _limit(query, 200, 1000)
        if isinstance(limit, Reply):
            return limit
        offset = _offset(query.get("page"))
        if offset is None:
            return _bad("page", "is not a page token of this history", query.get("page"))
        events = self.events[doc["execution_id"]]
        more = offset + limit < len(events)
        return Reply(
            200,
            {
                "execution_id": doc["execution_id"],
                "events": events[offset : offset + limit],
                "next_page": _page_token(offset + limit) if more else None,
                "truncated": False,
            },
        )

    def _stop(self, doc: dict[str, Any], body: dict[str, Any], user: str) -> Reply:
        if doc["status"] != "RUNNING":
            return Reply(
                409,
                {
                    "error": f"execution '{doc['execution_id']}' has already finished: "
                    f"it is {doc['status']}"
                },
            )
        error = body.get("error", "States.Aborted")
        cause = body.get("cause", f"stopped by {user}")
        doc.update(status="ABORTED", error=error, cause=cause, finished_ms=doc["started_ms"] + 5)
        self.events[doc["execution_id"]].append(
            {
                "type": "ExecutionAborted",
                "at_ms": doc["finished_ms"],
                "execution_id": doc["execution_id"],
                "state": None,
                "path": "",
                "error": error,
                "cause": cause,
            }
        )
        return Reply(200, doc)

    def _redrive(self, doc: dict[str, Any]) -> Reply:
        execution_id = doc["execution_id"]
        if doc["status"] not in ("FAILED", "ABORTED"):
            return Reply(
                409,
                {
                    "error": f"execution '{execution_id}' is {doc['status']}: only a FAILED or "
                    "ABORTED execution can be redriven"
                },
            )
        if not self.events[execution_id]:
            return Reply(
                409, {"error": f"execution '{execution_id}' has no recorded history to redrive"}
            )
        for key in ("error", "cause", "finished_ms", "output"):
            doc.pop(key, None)
        doc.update(status="RUNNING", redrive_count=int(doc.get("redrive_count") or 0) + 1)
        return Reply(202, doc)
