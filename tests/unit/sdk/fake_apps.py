"""An in-memory twin of SAND's application routes for the CLI's unit tests: deploy (the
ndjson progress stream), list, show, undeploy, logs and invoke, over a dict of apps, as an
``http.server`` in a thread on 127.0.0.1. It asks for no token (the identity routes have
their twin in ``tests.unit.fake_sand``) and answers as ``frontend/openapi.yaml`` says:
404 ``{"error"}`` for an app that is not deployed or a workflow it does not have, 429 with
``Retry-After`` for an app marked busy."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class AppsStore:
    """Deployed apps by name (their metadata) and each one's log lines."""

    apps: dict[str, dict[str, Any]] = field(default_factory=dict)
    logs: dict[str, list[str]] = field(default_factory=dict)
    # what a deploy answers with: the problems of a failed deploy, or None to succeed
    deploy_problems: list[str] | None = None
    # apps whose invocations are refused as busy (429), with the Retry-After they get
    busy: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, workflows: tuple[str, ...] = ("main",)) -> None:
        self.apps[name] = {
            "name": name,
            "grains": ["first"],
            "workflows": {w: {"entry_grain": "first"} for w in workflows},
            "default_workflow": workflows[0],
            "backend": "process",
            "owner": "ada",
        }
        self.logs[name] = []


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _handle(self) -> None:
        store = self.server.store
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        parts = url.path.strip("/").split("/")
        if parts == ["v1", "apps"] and self.command == "GET":
            return self._send(200, {"apps": list(store.apps.values())})
        if parts == ["v1", "apps"] and self.command == "POST":
            return self._deploy()
        if len(parts) < 3 or parts[:2] != ["v1", "apps"]:
            return self._send(404, {"error": f"no route {self.command} {url.path}"})
        app = store.apps.get(parts[2])
        if app is None:
            return self._send(404, {"error": f"no application '{parts[2]}' is deployed"})
        rest = (self.command, *parts[3:])
        if rest == ("GET",):
            return self._send(200, app)
        if rest == ("DELETE",):
            del store.apps[parts[2]]
            return self._send(200, {"undeployed": parts[2]})
        if rest == ("GET", "logs"):
            # as the host agent: every note of its own, then the sandbox output's tail
            tail = int(query.get("tail", "200"))
            lines = store.logs[parts[2]]
            notes = [x for x in lines if x.startswith("[agent] ")]
            output = [x for x in lines if not x.startswith("[agent] ")][-tail:]
            return self._send(200, {"logs": "".join(f"{x}\n" for x in notes + output)})
        if rest == ("POST", "invoke"):
            workflow = query.get("workflow", app["default_workflow"])
            if workflow not in app["workflows"]:
                names = ", ".join(app["workflows"])
                return self._send(
                    404,
                    {
                        "error": f"application '{parts[2]}' has no workflow '{workflow}' "
                        f"(workflows: {names})"
                    },
                )
            if parts[2] in store.busy:
                retry = store.busy[parts[2]]
                message = (
                    f"application '{parts[2]}' is at its bound on host 'host-1': 8 of its "
                    "events wait or run, at most 8 per application "
                    f"(admission.max_queued_per_app); retry in {retry} s"
                )
                return self._send(
                    429,
                    {"error": message, "retry_after_s": retry},
                    {"Retry-After": str(retry)},
                )
            body = json.loads(raw) if raw.strip() else None
            return self._send(200, {"execution_id": "ex-1", "status": "SUCCEEDED", "output": body})
        return self._send(404, {"error": "no such route"})

    def _deploy(self) -> None:
        store = self.server.store
        lines: list[dict[str, Any]] = [{"phase": "unpacked"}]
        if store.deploy_problems is not None:
            lines.append({"status": "failed", "problems": store.deploy_problems})
        else:
            lines.append({"status": "deployed", "app": {"name": "deployed", "grains": ["a"]}})
        data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
        self.send_response(200 if store.deploy_problems is None else 400)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, store: AppsStore) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.store = store


@dataclass
class FakeApps:
    store: AppsStore
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def fake_apps(store: AppsStore | None = None) -> Iterator[FakeApps]:
    """The twin, running for the block, over ``store`` (a fresh one by default)."""
    store = store or AppsStore()
    server = _Server(store)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield FakeApps(store, server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
