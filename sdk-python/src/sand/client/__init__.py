"""The client SDK: deploy, invoke and inspect applications and their executions, manage
users and tokens over the HTTP API (``frontend/openapi.yaml``).

    from sand.client import SandClient, NotFound

    client = SandClient("http://127.0.0.1:18080")
    for row in client.all_executions(app="hello", status="FAILED"):
        print(row.execution_id, row.error, row.cause)

``SandClient`` (``gateway``) has one method per operation (the table is ``operations``);
answers are frozen records (``models``); refusals raise ``SandApiError`` subclasses
(``errors``) carrying the status, the server's message and its body.
"""

from sand.client.errors import (
    STATUS_ERRORS,
    BadGateway,
    BadRequest,
    Busy,
    ClientError,
    Conflict,
    Forbidden,
    GatewayTimeout,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    SandApiError,
    ServerError,
    ServiceUnavailable,
    Unauthorized,
    Unreachable,
    UriTooLong,
    error_class,
)
from sand.client.gateway import SandClient, pack_app
from sand.client.models import (
    AppInfo,
    AppLimits,
    Execution,
    ExecutionPage,
    ExecutionSummary,
    Health,
    HistoryEvent,
    HistoryPage,
    Identity,
    NewToken,
    Placement,
    TokenInfo,
    TriggerInfo,
    User,
)

__all__ = [
    "STATUS_ERRORS",
    "AppInfo",
    "AppLimits",
    "BadGateway",
    "BadRequest",
    "Busy",
    "ClientError",
    "Conflict",
    "Execution",
    "ExecutionPage",
    "ExecutionSummary",
    "Forbidden",
    "GatewayTimeout",
    "Health",
    "HistoryEvent",
    "HistoryPage",
    "Identity",
    "MethodNotAllowed",
    "NewToken",
    "NotFound",
    "PayloadTooLarge",
    "Placement",
    "SandApiError",
    "SandClient",
    "ServerError",
    "ServiceUnavailable",
    "TokenInfo",
    "TriggerInfo",
    "Unauthorized",
    "Unreachable",
    "UriTooLong",
    "User",
    "error_class",
    "pack_app",
]
