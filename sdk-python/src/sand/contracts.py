"""The contracts SAND's Python and Java sides share, from ``contracts.thrift``.

Every name rule, status, TTL and environment variable name two languages must agree
on is declared once in ``local-bus/src/main/thrift/contracts.thrift`` and generated
into ``sand_contracts`` (Python) and ``dev.sand.contracts`` (Java). This module is the
thin, typed face of the generated code: nothing here spells a contract string itself.
Redis keys are built in :mod:`sand.keys`. ``local-bus/contracts/src/test/resources/
contract-cases.json`` is checked by both languages, so they build the same names from
the same inputs.
"""

from __future__ import annotations

import hashlib
import re
from enum import StrEnum
from typing import Any, Final

from sand_contracts import constants as _c
from sand_contracts import ttypes as _t

# -- name rules (full match) -------------------------------------------------------------
APP_NAME: Final = re.compile(_c.NAME_APP)
GRAIN_NAME: Final = re.compile(_c.NAME_GRAIN)
WORKFLOW_NAME: Final = re.compile(_c.NAME_WORKFLOW)
HOST_ID: Final = re.compile(_c.NAME_HOST)
EXECUTION_ID: Final = re.compile(_c.NAME_EXECUTION)
TRIGGER_NAME: Final = re.compile(_c.NAME_TRIGGER)
DATA_REQUEST_ID: Final = re.compile(_c.NAME_DATA_REQUEST)
USER_NAME: Final = re.compile(_c.NAME_USER)

# identity (decision 0017)
TOKEN_FORMAT: Final = re.compile(re.escape(_c.TOKEN_PREFIX) + "[A-Za-z0-9_-]{43}")
HEADER_INTERNAL: Final[str] = _c.HEADER_INTERNAL
FILE_INTERNAL_SECRET: Final[str] = _c.FILE_INTERNAL_SECRET
FILE_ADMIN_TOKEN: Final[str] = _c.FILE_ADMIN_TOKEN


def sandbox_cgroup(state_dir: str) -> str:
    """The cgroup holding the process sandboxes of the host whose state dir is ``state_dir``
    (absolute, as the host's config names it): ``sand-`` and the first 16 hex digits of
    its SHA-256 (``CGROUP_PARENT``, decision 0022)."""
    if not state_dir.startswith("/"):
        raise ValueError(f"state dir must be an absolute path, got {state_dir!r}")
    digest = hashlib.sha256(state_dir.encode()).hexdigest()[:16]
    return _c.CGROUP_PARENT.format(hash=digest)


# -- time-to-live of Redis keys, seconds ----------------------------------------------------
RESULT_TTL_S: Final[int] = _c.RESULT_TTL_S
READY_TTL_S: Final[int] = _c.READY_TTL_S
GROUP_TTL_S: Final[int] = _c.GROUP_TTL_S
# on a grain instance's FINISHED copy: how many agent-queue records it pushed just before it
HEADER_PRODUCED: Final[str] = _c.HEADER_PRODUCED

# -- bounds of the cluster's configuration (the Java services check cluster.json against the same)
CONFIG_MAX_QUEUED: Final[int] = _c.CONFIG_MAX_QUEUED
CONFIG_MAX_RETRY_AFTER_S: Final[int] = _c.CONFIG_MAX_RETRY_AFTER_S
CONFIG_MAX_RETENTION_DAYS: Final[int] = _c.CONFIG_MAX_RETENTION_DAYS
CONFIG_MIN_CPU_WEIGHT: Final[int] = _c.CONFIG_MIN_CPU_WEIGHT
CONFIG_MAX_CPU_WEIGHT: Final[int] = _c.CONFIG_MAX_CPU_WEIGHT
CONFIG_MAX_PAYLOAD_KB: Final[int] = _c.CONFIG_MAX_PAYLOAD_KB
CONFIG_MAX_HOSTS: Final[int] = _c.CONFIG_MAX_HOSTS

# -- the global data layer (reached through the host agent) ------------------------------------
GDATA_MAX_VALUE_BYTES: Final[int] = _c.GDATA_MAX_VALUE_BYTES
GDATA_TIMEOUT_MS: Final[int] = _c.GDATA_TIMEOUT_MS
DATA_HEADER: Final[str] = _c.HEADER_DATA
# event header of a traced execution: W3C traceparent whose parent is the producing span (0019)
TRACEPARENT_HEADER: Final[str] = _c.HEADER_TRACEPARENT
# ... and the spans so far (JSON list of openapi.yaml's TraceSpan), when the frontend took it
TRACE_HEADER: Final[str] = _c.HEADER_TRACE
FRONTEND_IN_HEADER: Final[str] = _c.HEADER_FRONTEND_IN

# -- headers of an INVOKE event: idempotent starts and redrives (decision 0018) ----------------
HEADER_NAME: Final[str] = _c.HEADER_NAME
# what started an execution a trigger sent (decision 0034): compact JSON, see contracts.thrift
HEADER_TRIGGER: Final[str] = _c.HEADER_TRIGGER
HEADER_REDRIVE_STATE: Final[str] = _c.HEADER_REDRIVE_STATE
HEADER_REDRIVE_INPUT: Final[str] = _c.HEADER_REDRIVE_INPUT
HEADER_REDRIVE_VARIABLES: Final[str] = _c.HEADER_REDRIVE_VARIABLES
HEADER_REDRIVE_KEPT: Final[str] = _c.HEADER_REDRIVE_KEPT
HEADER_REDRIVE_COUNT: Final[str] = _c.HEADER_REDRIVE_COUNT
HEADER_STARTED_MS: Final[str] = _c.HEADER_STARTED_MS
# callbacks (decision 0033): the parked wait on a TIMER, and the outcome it was fired with
HEADER_CALLBACK: Final[str] = _c.HEADER_CALLBACK
HEADER_CALLBACK_OUTCOME: Final[str] = _c.HEADER_CALLBACK_OUTCOME
TASK_TOKEN_KEY_LABEL: Final[str] = _c.TASK_TOKEN_KEY_LABEL

# -- the error label of a grain's failures in its metrics (decision 0019) -----------------------
METRIC_ERROR_NAME: Final = re.compile(_c.METRIC_ERROR_NAME)
METRIC_ERROR_OTHER: Final[str] = _c.METRIC_ERROR_OTHER


def metric_error_label(error: str | None) -> str:
    """The label a failure of type ``error`` is counted under: the type itself when it is a
    plain name (``METRIC_ERROR_NAME``), else ``METRIC_ERROR_OTHER``, as the agent reads it."""
    if error and METRIC_ERROR_NAME.fullmatch(error):
        return error
    return METRIC_ERROR_OTHER


class Env(StrEnum):
    """The environment of a grain worker, set by the host agent (values are the names)."""

    APP = _c.ENV_APP
    APP_DIR = _c.ENV_APP_DIR
    HOST_ID = _c.ENV_HOST_ID
    REDIS_SOCKET = _c.ENV_REDIS_SOCKET
    REDIS_USER = _c.ENV_REDIS_USER
    REDIS_PASSWORD = _c.ENV_REDIS_PASSWORD
    PREFORK = _c.ENV_PREFORK
    MAX_CONCURRENCY = _c.ENV_MAX_CONCURRENCY
    GRACE_S = _c.ENV_GRACE_S
    BACKUP = _c.ENV_BACKUP
    REMOTE_GRAINS = _c.ENV_REMOTE_GRAINS
    LOCAL_GRAINS = _c.ENV_LOCAL_GRAINS
    AGENT_FD = _c.ENV_AGENT_FD
    TASK_TOKEN_KEY = _c.ENV_TASK_TOKEN_KEY


_STATUS_NAMES: dict[int, str] = _t.ExecutionStatus._VALUES_TO_NAMES


class ExecutionStatus(StrEnum):
    """Where an execution is; the value is what the result document and Cassandra store."""

    RUNNING = _STATUS_NAMES[_t.ExecutionStatus.RUNNING]
    SUCCEEDED = _STATUS_NAMES[_t.ExecutionStatus.SUCCEEDED]
    FAILED = _STATUS_NAMES[_t.ExecutionStatus.FAILED]
    ABORTED = _STATUS_NAMES[_t.ExecutionStatus.ABORTED]


# The result document's JSON keys: the field names of struct ExecutionResult.
RESULT_FIELDS: Final[frozenset[str]] = frozenset(
    spec[2] for spec in _t.ExecutionResult.thrift_spec if spec is not None
)


_STATUS_FIELD: Final[str] = _t.ExecutionResult.thrift_spec[4][2]


def result_document(status: ExecutionStatus, **fields: Any) -> dict[str, Any]:
    """The result document of an execution (``ExecutionResult`` in the IDL) as a dict.

    ``fields`` are the struct's other fields by name; a name the IDL does not declare
    raises ``ValueError``, so a typo cannot create a key the Java side never reads.
    ``output`` and ``trace`` are JSON values embedded as they are.
    """
    unknown = fields.keys() - RESULT_FIELDS
    if unknown:
        raise ValueError(f"result document: unknown field(s) {sorted(unknown)}")
    document = {name: value for name, value in fields.items() if value is not None}
    document[_STATUS_FIELD] = status.value
    return document
