"""Which ``SandClient`` method serves each operation of ``frontend/openapi.yaml``.

One row per operation (method and path as the document spells them). The row names the
method, how each documented parameter and body property reaches it (``params``: the API's
name -> the method's keyword), and the record its success answer becomes (``model``; with
``envelope`` when the answer wraps a list of them in one property). An answer the method
returns as a plain value says why in ``unmodelled``.

``tests/unit/sdk/test_client_openapi.py`` reads this table against the document: an operation
without a row, a parameter without a keyword, a property without a field, or a status without
an exception class fails that test, naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sand.client.models import (
    AppInfo,
    Execution,
    ExecutionPage,
    Health,
    HistoryPage,
    Identity,
    NewToken,
    TokenInfo,
    TriggerInfo,
    User,
)


@dataclass(frozen=True, slots=True)
class Operation:
    method: str  # HTTP method, upper case
    path: str  # the path template as in the document
    client_method: str  # the SandClient method
    params: dict[str, str] = field(default_factory=dict)  # API name -> method's keyword
    model: type[Any] | None = None
    envelope: str | None = None  # the property of the answer that holds the model's list
    unmodelled: str | None = None  # why the answer is returned as a plain value


# The callback routes answer {"status"} alone: the method returns that string.
_TASK_STATUS = "returns status, the answer's one property (the wait's status now)"

OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", "/health", "health", model=Health),
    Operation("HEAD", "/health", "healthy", unmodelled="no body: the status is the answer"),
    Operation("GET", "/metrics", "metrics", unmodelled="Prometheus text format, for scrapers"),
    Operation("GET", "/v1/whoami", "whoami", model=Identity),
    Operation("GET", "/v1/users", "users", model=User, envelope="users"),
    Operation("POST", "/v1/users", "create_user", {"name": "name", "role": "role"}, model=User),
    Operation(
        "DELETE",
        "/v1/users/{name}",
        "delete_user",
        {"name": "name"},
        unmodelled="returns tokens_revoked, the one figure a caller uses",
    ),
    Operation("GET", "/v1/tokens", "tokens", {"user": "user"}, model=TokenInfo, envelope="tokens"),
    Operation(
        "POST",
        "/v1/tokens",
        "create_token",
        {"user": "user", "label": "label", "expires_in_days": "expires_in_days"},
        model=NewToken,
    ),
    Operation(
        "DELETE",
        "/v1/tokens/{id}",
        "revoke_token",
        {"id": "token_id"},
        unmodelled="nothing to return: the token named is revoked",
    ),
    Operation("GET", "/v1/apps", "list_apps", model=AppInfo, envelope="apps"),
    Operation(
        "POST",
        "/v1/apps",
        "deploy",
        {
            "backend": "backend",
            "backups": "backups",
            "remote_grains": "remote_grains",
            "placement": "placement",
            "dry_run": "dry_run",
        },
        unmodelled="streamed progress lines, passed to on_progress; returns the app document",
    ),
    Operation(
        "GET",
        "/v1/apps/{app}/workflows/{workflow}",
        "workflow",
        {"app": "app", "workflow": "workflow"},
        unmodelled="the definition is free-form JSON (ASL or native), returned as parsed",
    ),
    Operation(
        "GET",
        "/v1/cluster",
        "cluster",
        unmodelled="nested hosts, sandboxes and workers, returned as the frontend sent them",
    ),
    Operation("GET", "/v1/apps/{app}", "describe", {"app": "app"}, model=AppInfo),
    Operation(
        "DELETE",
        "/v1/apps/{app}",
        "undeploy",
        {"app": "app"},
        unmodelled="the agent's answer has no documented properties",
    ),
    Operation(
        "GET",
        "/v1/apps/{app}/logs",
        "logs",
        {"app": "app", "tail": "tail"},
        unmodelled="returns the logs text",
    ),
    Operation(
        "GET",
        "/v1/apps/{app}/triggers",
        "triggers",
        {"app": "app"},
        model=TriggerInfo,
        envelope="triggers",
    ),
    Operation(
        "POST",
        "/v1/apps/{app}/triggers/{name}/pause",
        "pause_trigger",
        {"app": "app", "name": "name"},
        model=TriggerInfo,
    ),
    Operation(
        "POST",
        "/v1/apps/{app}/triggers/{name}/resume",
        "resume_trigger",
        {"app": "app", "name": "name"},
        model=TriggerInfo,
    ),
    Operation(
        "POST",
        "/v1/apps/{app}/invoke",
        "invoke",
        {
            "app": "app",
            "workflow": "workflow",
            "mode": "wait",
            "timeout_s": "timeout_s",
            "trace": "trace",
            "via": "via",
            "name": "name",
        },
        model=Execution,
    ),
    Operation(
        "GET",
        "/v1/executions",
        "executions",
        {"app": "app", "status": "status", "since": "since", "limit": "limit", "page": "page"},
        model=ExecutionPage,
    ),
    Operation("GET", "/v1/executions/{id}", "execution", {"id": "execution_id"}, model=Execution),
    Operation(
        "GET",
        "/v1/executions/{id}/history",
        "history",
        {"id": "execution_id", "limit": "limit", "page": "page"},
        model=HistoryPage,
    ),
    Operation(
        "POST",
        "/v1/executions/{id}/stop",
        "stop",
        {"id": "execution_id", "error": "error", "cause": "cause"},
        model=Execution,
    ),
    Operation(
        "POST",
        "/v1/executions/{id}/redrive",
        "redrive",
        {"id": "execution_id"},
        model=Execution,
    ),
    Operation(
        "POST",
        "/v1/tasks/{token}/success",
        "send_task_success",
        {"token": "token", "output": "output"},
        unmodelled=_TASK_STATUS,
    ),
    Operation(
        "POST",
        "/v1/tasks/{token}/failure",
        "send_task_failure",
        {"token": "token", "error": "error", "cause": "cause"},
        unmodelled=_TASK_STATUS,
    ),
    Operation(
        "POST",
        "/v1/tasks/{token}/heartbeat",
        "send_task_heartbeat",
        {"token": "token"},
        unmodelled=_TASK_STATUS,
    ),
)
