"""What a refused request raises: ``SandApiError`` and one subclass per status a caller
branches on.

Every error carries the HTTP ``status`` (0: the gateway was not reached), the message shown
to a person (``str(exc)``: "HTTP 404: no execution 'abc' is recorded", or advice for 401 and
403), the server's own ``{"error": ...}`` text (``server_message``) and the decoded ``body``.
``error_for(status, ...)`` picks the class; ``STATUS_ERRORS`` is the table it reads, which
``tests/unit/sdk/test_client_openapi.py`` checks against every status ``frontend/openapi.yaml``
documents.
"""

from __future__ import annotations

from typing import Any


class SandApiError(Exception):
    """The API refused a request; ``status`` is the HTTP status, ``body`` its JSON."""

    def __init__(self, status: int, message: str, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body

    @property
    def message(self) -> str:
        return str(self)

    @property
    def server_message(self) -> str | None:
        """The server's ``error`` text as it sent it, without advice or status prefix."""
        if isinstance(self.body, dict) and isinstance(self.body.get("error"), str):
            return str(self.body["error"])
        return None


class Unreachable(SandApiError):
    """No answer: the gateway refused the connection (``status`` 0)."""


class ClientError(SandApiError):
    """A 4xx answer: the request (or who sent it) is at fault."""


class BadRequest(ClientError):
    """400: a parameter or the body is invalid; the message names it."""


class Unauthorized(ClientError):
    """401: no token, or one that is unknown, revoked or expired."""


class Forbidden(ClientError):
    """403: the caller's role does not allow the call."""


class NotFound(ClientError):
    """404: no such app, workflow, execution, user or token (or another user's)."""


class MethodNotAllowed(ClientError):
    """405: a known path, a wrong method."""


class Conflict(ClientError):
    """409: the resource is not in a state that allows the call (a finished execution
    stopped, a succeeded one redriven, a taken name); the message says why."""


class PayloadTooLarge(ClientError):
    """413: the body is over the limit."""


class UriTooLong(ClientError):
    """414: the request line is over the gateway's limit (a path parameter far too long)."""


class Busy(ClientError):
    """429: every host that runs the application is at its admission bound (decision 0023);
    nothing was queued. ``retry_after_s``: how long to wait before trying again (the
    ``Retry-After`` header, or the body's ``retry_after_s``; None when the answer had neither)."""

    def __init__(
        self, status: int, message: str, body: Any = None, retry_after_s: int | None = None
    ) -> None:
        super().__init__(status, message, body)
        if retry_after_s is None and isinstance(body, dict):
            value = body.get("retry_after_s")
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                retry_after_s = value
        self.retry_after_s = retry_after_s


class ServerError(SandApiError):
    """A 5xx answer: the server could not do it; retrying later may help."""


class BadGateway(ServerError):
    """502: the host agent answered something the frontend could not read."""


class ServiceUnavailable(ServerError):
    """503: Redis, the host agent or Kafka is unreachable."""


class GatewayTimeout(ServerError):
    """504: the host agent did not answer in time."""


# The class of each status a caller may branch on; others fall to ClientError / ServerError.
STATUS_ERRORS: dict[int, type[SandApiError]] = {
    0: Unreachable,
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: PayloadTooLarge,
    414: UriTooLong,
    429: Busy,
    500: ServerError,
    502: BadGateway,
    503: ServiceUnavailable,
    504: GatewayTimeout,
}


def error_class(status: int) -> type[SandApiError]:
    """The exception class for ``status``: its own, else by class (4xx, 5xx), else the base."""
    if status in STATUS_ERRORS:
        return STATUS_ERRORS[status]
    if 400 <= status < 500:
        return ClientError
    if 500 <= status < 600:
        return ServerError
    return SandApiError


def error_for(status: int, message: str, body: Any = None) -> SandApiError:
    """An instance of ``error_class(status)``."""
    return error_class(status)(status, message, body)
