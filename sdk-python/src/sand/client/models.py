"""What the API answers, as immutable records: one frozen dataclass per response schema of
``frontend/openapi.yaml`` (named after it in each docstring).

Field names are the JSON property names. A property the schema requires is a field without a
default; an optional one defaults to None. ``tests/unit/sdk/test_client_openapi.py`` checks
exactly that against the document, so a property added to the API without its field here
fails the test. Three class attributes tell that test what is not a plain property:

- ``LOCAL_FIELDS``: fields that do not come from the body (a header, the raw document);
- ``FLATTENED``: fields holding a record whose properties are this schema's too (``allOf``);
- ``OPEN_FIELD``: a mapping field that keeps the properties the record does not name.

``from_json`` is lenient about a property the server left out (the record then holds None
or an empty value) so that a newer server never breaks an older client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar


def _opt_int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


def _opt_object(value: Any) -> dict[str, Any] | None:
    return dict(value) if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True)
class Health:
    """``Health``: one frontend's liveness (``GET /health``, also when 503)."""

    status: str  # "ok" or "unavailable"
    service: str
    frontend_id: str
    port: int
    pid: int
    redis: str
    error: str | None = None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Health:
        return cls(
            status=str(doc.get("status", "")),
            service=str(doc.get("service", "")),
            frontend_id=str(doc.get("frontend_id", "")),
            port=int(doc.get("port", 0)),
            pid=int(doc.get("pid", 0)),
            redis=str(doc.get("redis", "")),
            error=_opt_str(doc.get("error")),
        )


@dataclass(frozen=True, slots=True)
class Execution:
    """``ExecutionDocument`` (also ``InvokeResult`` and ``Accepted``): an execution's state.

    ``output`` when SUCCEEDED, ``error``/``cause`` when FAILED or ABORTED; ``input``, ``name``
    and ``redrive_count`` when recorded; ``trace`` when the invocation asked for it;
    ``trigger`` when a trigger started it (decision 0034): ``{"name", "kind": "schedule",
    "time"}`` or ``{"name", "kind": "topic", "topic", "partition", "offset"}``.
    ``existing`` is True when an idempotent start (``invoke(name=...)``) found the execution
    that name already started (header ``X-Sand-Existing``)."""

    LOCAL_FIELDS: ClassVar[frozenset[str]] = frozenset({"existing"})

    execution_id: str
    status: str  # a sand.contracts.ExecutionStatus value, or "UNKNOWN"
    output: Any = None
    error: str | None = None
    cause: str | None = None
    app: str | None = None
    workflow: str | None = None
    started_ms: int | None = None
    finished_ms: int | None = None
    input: Any = None
    name: str | None = None
    redrive_count: int | None = None
    trace: Any = None
    trigger: dict[str, Any] | None = None
    existing: bool = False

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], *, existing: bool = False) -> Execution:
        return cls(
            execution_id=str(doc.get("execution_id", "")),
            status=str(doc.get("status", "UNKNOWN")),
            output=doc.get("output"),
            error=_opt_str(doc.get("error")),
            cause=_opt_str(doc.get("cause")),
            app=_opt_str(doc.get("app")),
            workflow=_opt_str(doc.get("workflow")),
            started_ms=_opt_int(doc.get("started_ms")),
            finished_ms=_opt_int(doc.get("finished_ms")),
            input=doc.get("input"),
            name=_opt_str(doc.get("name")),
            redrive_count=_opt_int(doc.get("redrive_count")),
            trace=doc.get("trace"),
            trigger=_opt_object(doc.get("trigger")),
            existing=existing,
        )


@dataclass(frozen=True, slots=True)
class ExecutionSummary:
    """``ExecutionSummary``: one row of ``GET /v1/executions``; ``trigger`` as in
    ``Execution``."""

    execution_id: str
    app: str
    workflow: str
    status: str
    started_ms: int
    name: str | None = None
    finished_ms: int | None = None
    error: str | None = None
    cause: str | None = None
    redrive_count: int | None = None
    trigger: dict[str, Any] | None = None

    @property
    def duration_ms(self) -> int | None:
        """Finished minus started, or None while it runs."""
        return None if self.finished_ms is None else self.finished_ms - self.started_ms

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ExecutionSummary:
        return cls(
            execution_id=str(doc.get("execution_id", "")),
            app=str(doc.get("app", "")),
            workflow=str(doc.get("workflow", "")),
            status=str(doc.get("status", "UNKNOWN")),
            started_ms=_opt_int(doc.get("started_ms")) or 0,
            name=_opt_str(doc.get("name")),
            finished_ms=_opt_int(doc.get("finished_ms")),
            error=_opt_str(doc.get("error")),
            cause=_opt_str(doc.get("cause")),
            redrive_count=_opt_int(doc.get("redrive_count")),
            trigger=_opt_object(doc.get("trigger")),
        )


@dataclass(frozen=True, slots=True)
class ExecutionPage:
    """``ExecutionPage``: newest first; ``next_page`` is None on the last page."""

    executions: tuple[ExecutionSummary, ...]
    next_page: str | None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ExecutionPage:
        rows = doc.get("executions") or []
        return cls(tuple(ExecutionSummary.from_json(r) for r in rows), doc.get("next_page"))


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    """``HistoryEvent``: one step of an execution, in the same shape on the cluster and in
    the emulator. The keys every event has are fields; the keys of its ``type`` (``input``,
    ``output``, ``grain``, ``host``, ``error``, ...) are in ``details``, and the common ones
    have accessors. A value over 32 KiB arrives as ``{"truncated": true, "bytes": N,
    "preview": "..."}``."""

    OPEN_FIELD: ClassVar[str] = "details"

    type: str
    at_ms: int
    execution_id: str = ""
    state: str | None = None  # None: the event concerns the execution
    path: str = ""  # "" at the top level; "Fan[1]", "Each[3]/Fan[0]" inside branches
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def error(self) -> str | None:
        return _opt_str(self.details.get("error"))

    @property
    def cause(self) -> str | None:
        return _opt_str(self.details.get("cause"))

    @property
    def grain(self) -> str | None:
        return _opt_str(self.details.get("grain"))

    @property
    def host(self) -> str | None:
        return _opt_str(self.details.get("host"))

    @property
    def pid(self) -> int | None:
        return _opt_int(self.details.get("pid"))

    @property
    def duration_ms(self) -> int | None:
        return _opt_int(self.details.get("duration_ms"))

    @property
    def failed(self) -> bool:
        """An event that reports a failure (TaskFailed, BranchFailed, ExecutionFailed, ...)."""
        return self.type.endswith("Failed") or self.type == "ExecutionAborted"

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> HistoryEvent:
        common = {"type", "at_ms", "execution_id", "state", "path"}
        return cls(
            type=str(doc.get("type", "")),
            at_ms=_opt_int(doc.get("at_ms")) or 0,
            execution_id=str(doc.get("execution_id", "")),
            state=_opt_str(doc.get("state")),
            path=str(doc.get("path") or ""),
            details={k: v for k, v in doc.items() if k not in common},
        )

    def to_json(self) -> dict[str, Any]:
        """The event as the server sent it."""
        return {
            "type": self.type,
            "at_ms": self.at_ms,
            "execution_id": self.execution_id,
            "state": self.state,
            "path": self.path,
            **self.details,
        }


@dataclass(frozen=True, slots=True)
class HistoryPage:
    """``HistoryPage``: events in order; ``truncated`` when the per-execution cap was hit."""

    execution_id: str
    events: tuple[HistoryEvent, ...]
    next_page: str | None
    truncated: bool

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> HistoryPage:
        return cls(
            execution_id=str(doc.get("execution_id", "")),
            events=tuple(HistoryEvent.from_json(e) for e in doc.get("events") or []),
            next_page=doc.get("next_page"),
            truncated=bool(doc.get("truncated", False)),
        )


@dataclass(frozen=True, slots=True)
class Identity:
    """``Identity``: who the server takes the caller for (``GET /v1/whoami``)."""

    user: str
    role: str  # "user" or "admin"
    token_id: str

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Identity:
        return cls(str(doc["user"]), str(doc["role"]), str(doc.get("token_id", "")))


@dataclass(frozen=True, slots=True)
class User:
    """``User``."""

    name: str
    role: str  # "user" or "admin"
    created: str | None = None  # ISO-8601

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> User:
        return cls(str(doc["name"]), str(doc["role"]), doc.get("created"))


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """``TokenInfo``: a token as listed, everything but the token itself (kept hashed)."""

    id: str
    user: str
    label: str | None = None
    created: str | None = None  # ISO-8601
    expires: str | None = None  # ISO-8601; None: never

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> TokenInfo:
        return cls(
            id=str(doc["id"]),
            user=str(doc["user"]),
            label=doc.get("label"),
            created=doc.get("created"),
            expires=doc.get("expires"),
        )


@dataclass(frozen=True, slots=True)
class NewToken:
    """``TokenInfo`` + ``token``: a token just made; ``token`` is its only appearance (left
    out of ``repr``)."""

    FLATTENED: ClassVar[frozenset[str]] = frozenset({"info"})

    info: TokenInfo
    token: str = field(repr=False)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> NewToken:
        return cls(TokenInfo.from_json(doc), str(doc["token"]))


@dataclass(frozen=True, slots=True)
class AppLimits:
    """``AppMetadata.limits``."""

    timeout_s: int | None = None
    memory_mb: int | None = None
    cpu_weight: int | None = None
    max_concurrency: int | None = None
    payload_kb: int | None = None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> AppLimits:
        return cls(*(_opt_int(doc.get(k)) for k in cls.__dataclass_fields__))


@dataclass(frozen=True, slots=True)
class Placement:
    """``AppMetadata.placement``, resolved: the app's hosts, and every grain's."""

    hosts: tuple[str, ...] | None = None
    grains: Mapping[str, tuple[str, ...]] | None = None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Placement:
        grains = doc.get("grains")
        return cls(
            hosts=_strs(doc["hosts"]) if "hosts" in doc else None,
            grains={g: _strs(h) for g, h in grains.items()} if isinstance(grains, dict) else None,
        )


@dataclass(frozen=True, slots=True)
class AppInfo:
    """``AppMetadata``: a deployed application as its host agent describes it. Every property
    is optional in the schema. ``document`` is the whole answer, for what the agent adds
    beyond the schema (``state``, ``sandbox``)."""

    LOCAL_FIELDS: ClassVar[frozenset[str]] = frozenset({"document"})

    name: str | None = None
    version: int | None = None
    default_workflow: str | None = None
    workflows: Mapping[str, Any] | None = None
    grains: tuple[str, ...] | None = None
    events_per_instance: Mapping[str, int] | None = None
    limits: AppLimits | None = None
    backend: str | None = None
    owner: str | None = None
    deployed_at: str | None = None
    placement: Placement | None = None
    local_grains: tuple[str, ...] | None = None
    document: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> AppInfo:
        limits, placement = doc.get("limits"), doc.get("placement")
        return cls(
            name=_opt_str(doc.get("name")),
            version=_opt_int(doc.get("version")),
            default_workflow=_opt_str(doc.get("default_workflow")),
            workflows=doc.get("workflows"),
            grains=_strs(doc["grains"]) if "grains" in doc else None,
            events_per_instance=doc.get("events_per_instance"),
            limits=AppLimits.from_json(limits) if isinstance(limits, dict) else None,
            backend=_opt_str(doc.get("backend")),
            owner=_opt_str(doc.get("owner")),
            deployed_at=_opt_str(doc.get("deployed_at")),
            placement=Placement.from_json(placement) if isinstance(placement, dict) else None,
            local_grains=_strs(doc["local_grains"]) if "local_grains" in doc else None,
            document=dict(doc),
        )


@dataclass(frozen=True, slots=True)
class TriggerInfo:
    """``Trigger``: one trigger of an application (decision 0034) and its state on the cluster.

    ``kind`` says which fields apply: ``schedule`` has ``schedule``, ``timezone``, ``input``,
    ``missed``, ``next_firing`` (None while paused) and ``last_firing`` (``{"time",
    "execution_id"}``, None before the first); ``topic`` has ``topic`` and ``lag`` (records
    of the topic not yet started, None when unknown)."""

    name: str
    kind: str  # "schedule" or "topic"
    workflow: str
    paused: bool
    paused_at: str | None  # ISO-8601 while paused, else None
    schedule: str | None = None  # rate(N unit) or cron(F)
    timezone: str | None = None
    input: Any = None
    missed: str | None = None  # "run_once" or "skip"
    next_firing: str | None = None
    last_firing: Mapping[str, Any] | None = None
    topic: str | None = None
    lag: int | None = None

    @property
    def last_firing_time(self) -> str | None:
        """When the schedule last fired (UTC), or None."""
        return None if self.last_firing is None else _opt_str(self.last_firing.get("time"))

    @property
    def last_execution_id(self) -> str | None:
        """The execution the last firing started, or None."""
        firing = self.last_firing
        return None if firing is None else _opt_str(firing.get("execution_id"))

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> TriggerInfo:
        return cls(
            name=str(doc.get("name", "")),
            kind=str(doc.get("kind", "")),
            workflow=str(doc.get("workflow", "")),
            paused=bool(doc.get("paused", False)),
            paused_at=_opt_str(doc.get("paused_at")),
            schedule=_opt_str(doc.get("schedule")),
            timezone=_opt_str(doc.get("timezone")),
            input=doc.get("input"),
            missed=_opt_str(doc.get("missed")),
            next_firing=_opt_str(doc.get("next_firing")),
            last_firing=_opt_object(doc.get("last_firing")),
            topic=_opt_str(doc.get("topic")),
            lag=_opt_int(doc.get("lag")),
        )
