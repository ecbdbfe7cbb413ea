"""An in-memory twin of SAND's identity API for unit tests: a gateway that asks for a
bearer token and a host agent that asks for the internal secret, over one store of users
and tokens, each an ``http.server`` in a thread on 127.0.0.1.

It plays the contract of issue 11 (``/v1/whoami``, ``/v1/users``, ``/v1/tokens``; 401 with
``WWW-Authenticate`` without a valid token, 403 for a non-admin on an admin route), the
executions routes of issue 13 (``/v1/executions`` list, document, history, stop, redrive;
an idempotent ``invoke?name=``; another user's execution answers 404 like a missing one;
see ``tests/unit/fake_executions.py``), the callback routes of issue 23
(``/v1/tasks/{token}/...``, see ``tests/unit/fake_tasks.py``) and records every request
(method, path, headers) so a test can check what a client sent.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.unit.fake_executions import ExecutionStore, Reply
from tests.unit.fake_tasks import TaskStore

NOT_VALID = "the token is not valid (unknown, revoked or expired)"
HEALTH = {
    "status": "ok",
    "service": "frontend",
    "frontend_id": "fe-0",
    "port": 0,
    "pid": 0,
    "redis": "/fake/redis.sock",
}


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Store:
    """Users by name (their role) and tokens by plaintext (id, user, label)."""

    internal_secret: str = field(default_factory=lambda: secrets.token_hex(24))
    users: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, tuple[str, str, str | None]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    executions: ExecutionStore = field(default_factory=ExecutionStore)
    tasks: TaskStore = field(default_factory=TaskStore)

    def add_user(self, name: str, role: str = "user") -> None:
        self.users[name] = role

    def issue(self, user: str, label: str | None = None) -> str:
        token = "sand_" + secrets.token_urlsafe(32)  # 43 base64url characters
        self.tokens[token] = (f"tok_{secrets.token_hex(4)}", user, label)
        return token

    def token_doc(self, token: str) -> dict[str, Any]:
        token_id, user, label = self.tokens[token]
        return {"id": token_id, "user": user, "label": label, "created": None, "expires": None}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: pytest shows the assertion instead

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.end_headers()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw.strip() else None
        store = self.server.store
        store.requests.append(Recorded(self.command, self.path, dict(self.headers), body))
        url = urlsplit(self.path)
        if url.path == "/health":
            return self._send(200, HEALTH)
        caller = self._caller()
        if caller is None:
            return
        user, role = caller
        parts = url.path.strip("/").split("/")
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        route = (self.command, *parts[:2])
        if route == ("GET", "v1", "whoami"):
            token_id = "tok_system" if user == "system" else store.tokens[self._bearer()][0]
            return self._send(200, {"user": user, "role": role, "token_id": token_id})
        if route == ("GET", "v1", "apps") and len(parts) == 2:
            return self._send(200, {"apps": store.executions.apps_of(user, role)})
        if parts[:2] in (["v1", "executions"], ["v1", "apps"]):
            segments = [unquote(p) for p in parts[2:]]
            reply = store.executions.handle(
                self.command, parts[1], segments, query, body, user, role
            )
            if reply is not None:
                return self._reply(reply)
        if parts[:2] == ["v1", "tasks"]:
            owners = {name: app["owner"] for name, app in store.executions.apps.items()}
            segments = [unquote(p) for p in parts[2:]]
            reply = store.tasks.handle(self.command, segments, body, user, role, owners)
            if reply is not None:
                return self._reply(reply)
        if parts[:2] == ["v1", "users"]:
            if role != "admin":
                return self._send(403, {"error": "only an admin may manage users"})
            return self._users(parts[2:], body)
        if parts[:2] == ["v1", "tokens"]:
            return self._tokens(user, role, parts[2:], body, query)
        return self._send(404, {"error": f"no route {self.command} {url.path}"})

    def _bearer(self) -> str:
        return self.headers.get("Authorization", "").removeprefix("Bearer ").strip()

    def _caller(self) -> tuple[str, str] | None:
        store = self.server.store
        if self.server.role == "agent":
            if self.headers.get("X-Sand-Internal") != store.internal_secret:
                self._send(401, {"error": "the internal secret is missing or wrong"})
                return None
            return ("system", "admin")
        header = self.headers.get("Authorization")
        if header is None or not header.startswith("Bearer "):
            self._send(401, {"error": "missing Authorization: Bearer header"}, bearer=True)
            return None
        token = self._bearer()
        if token not in store.tokens or store.tokens[token][1] not in store.users:
            self._send(401, {"error": NOT_VALID}, bearer=True)
            return None
        user = store.tokens[token][1]
        return (user, store.users[user])

    def _users(self, rest: list[str], body: Any) -> None:
        store = self.server.store
        if self.command == "GET" and not rest:
            listed = [{"name": n, "role": r, "created": None} for n, r in store.users.items()]
            return self._send(200, {"users": listed})
        if self.command == "POST" and not rest:
            name, role = body["name"], body.get("role", "user")
            if name in store.users:
                return self._send(409, {"error": f"the user '{name}' exists"})
            store.add_user(name, role)
            return self._send(201, {"name": name, "role": role, "created": None})
        if self.command == "DELETE" and len(rest) == 1:
            if store.users.pop(rest[0], None) is None:
                return self._send(404, {"error": f"no user '{rest[0]}'"})
            theirs = [t for t, (_, u, _) in store.tokens.items() if u == rest[0]]
            for token in theirs:
                del store.tokens[token]
            return self._send(200, {"deleted": rest[0], "tokens_revoked": len(theirs)})
        return self._send(404, {"error": "no such route"})

    def _tokens(
        self, user: str, role: str, rest: list[str], body: Any, query: dict[str, str]
    ) -> None:
        store = self.server.store
        if self.command == "GET" and not rest:
            whose = query.get("user", user)
            if whose != user and role != "admin":
                return self._send(403, {"error": "only an admin may list another's tokens"})
            listed = [store.token_doc(t) for t, (_, u, _) in store.tokens.items() if u == whose]
            return self._send(200, {"tokens": listed})
        if self.command == "POST" and not rest:
            whose = (body or {}).get("user", user)
            if whose != user and role != "admin":
                return self._send(403, {"error": "only an admin may make another's tokens"})
            token = store.issue(whose, (body or {}).get("label"))
            return self._send(201, {**store.token_doc(token), "token": token})
        if self.command == "DELETE" and len(rest) == 1:
            for token, (token_id, owner, _) in list(store.tokens.items()):
                if token_id == rest[0] and (owner == user or role == "admin"):
                    del store.tokens[token]
                    return self._send(200, {"revoked": token_id})
            return self._send(404, {"error": f"no token '{rest[0]}'"})
        return self._send(404, {"error": "no such route"})

    def _reply(self, reply: Reply) -> None:
        self._send(reply.status, reply.doc, headers=reply.headers)

    def _send(
        self,
        status: int,
        doc: Any,
        *,
        bearer: bool = False,
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if bearer:
            self.send_header("WWW-Authenticate", 'Bearer realm="sand"')
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, role: str, store: Store) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.role = role
        self.store = store


@dataclass
class FakeSand:
    """A running fake: ``gateway_url`` asks for bearer tokens, ``agent_url`` for the secret."""

    store: Store
    gateway_port: int
    agent_port: int

    @property
    def gateway_url(self) -> str:
        return f"http://127.0.0.1:{self.gateway_port}"

    @property
    def agent_url(self) -> str:
        return f"http://127.0.0.1:{self.agent_port}"


@contextmanager
def fake_sand(store: Store | None = None) -> Iterator[FakeSand]:
    """Both servers, running for the block, over ``store`` (a fresh one by default)."""
    store = store or Store()
    servers = [_Server("gateway", store), _Server("agent", store)]
    threads = [threading.Thread(target=s.serve_forever, args=(0.02,), daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    try:
        yield FakeSand(store, servers[0].server_address[1], servers[1].server_address[1])
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
