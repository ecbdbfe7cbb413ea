"""The ``context`` handed to ``handle(event, context)``.

The same object is built by the emulator and by the grain worker on the cluster,
so a grain runs unchanged in both.
"""

from __future__ import annotations

import copy
import logging
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sand.data import (
    DataStore,
    Scope,
    check_key,
    check_scope,
    check_value_size,
    decode_value,
    encode_value,
)

GRAIN_LOGGER = "sand.grain"


class NextGrainError(ValueError):
    """A grain chose a next grain outside its ``potentialNext``.

    Left uncaught by the grain it fails the task with ``States.Runtime`` (the error
    the engine reports for the same mistake), not with the class name.
    """


class Data:
    """The data layer as a grain sees it: ``context.data``.

    Values are bytes or anything JSON-serialisable; keys are strings, private to
    the application. ``scope="local"`` (the default) is the host's fast store (Redis),
    ``scope="global"`` the cluster-wide one (Cassandra on the cluster, reached through
    the host agent; values up to 1 MiB). Every method blocks on the backend and
    raises :class:`~sand.data.DataStoreError` when it fails.
    """

    def __init__(self, stores: Mapping[Scope, DataStore]) -> None:
        self._stores = dict(stores)

    def get(self, key: str, default: Any = None, *, scope: Scope = "local") -> Any:
        """The value stored under ``key``, or ``default`` when there is none."""
        raw = self._store(scope).get(check_key(key))
        return default if raw is None else decode_value(raw)

    def put(self, key: str, value: Any, *, scope: Scope = "local") -> None:
        """Store ``value`` (bytes or JSON-serialisable) under ``key``; TypeError otherwise.

        A global value may take at most ``sand.data.MAX_GLOBAL_VALUE_BYTES`` (1 MiB)
        encoded; a larger one raises ValueError and stores nothing.
        """
        store = self._store(scope)
        key = check_key(key)
        store.put(key, check_value_size(key, encode_value(value), scope))

    def delete(self, key: str, *, scope: Scope = "local") -> bool:
        """Remove ``key``; True when it existed."""
        return self._store(scope).delete(check_key(key))

    def keys(self, prefix: str = "", *, scope: Scope = "local") -> list[str]:
        """The keys starting with ``prefix``, sorted."""
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a string, got {type(prefix).__name__}")
        return self._store(scope).keys(prefix)

    def _store(self, scope: str) -> DataStore:
        check_scope(scope)
        try:
            return self._stores[scope]  # type: ignore[index]
        except KeyError:
            raise ValueError(f"the {scope} data layer is not available here") from None


class StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is emitted: a test runner swaps it,
    and on the cluster an instance's stderr tags each line with its execution and grain
    while the grain runs (``sand_worker.logtag``)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def log_grains_to_stderr(line_format: str, level: int) -> None:
    """Send the records of every grain's ``context.logger`` at ``level`` and above (or at
    the level a grain sets on its logger) to stderr as ``line_format`` says; once per
    process, a second call only changes the level."""
    logger = logging.getLogger(GRAIN_LOGGER)
    logger.setLevel(level)
    if any(isinstance(h, StderrHandler) for h in logger.handlers):
        return
    handler = StderrHandler()
    handler.setFormatter(
        logging.Formatter(line_format, defaults={"execution_id": "-", "grain": "-"})
    )
    logger.addHandler(handler)


class _ExecutionFields(logging.Filter):
    """Stamps every record with the execution id, app and grain (key=value logs)."""

    def __init__(self, execution_id: str, app_name: str, grain_name: str) -> None:
        super().__init__()
        self.fields = {"execution_id": execution_id, "app": app_name, "grain": grain_name}

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in self.fields.items():
            setattr(record, name, value)
        return True


class _InvocationLogger(logging.Logger):
    """A logger outside the logging tree: ``setLevel`` clears the tree's caches of enabled
    levels, never this logger's own, so it clears that too (or a level set after a first
    record at that level would be ignored)."""

    def setLevel(self, level: int | str) -> None:
        super().setLevel(level)
        self._cache.clear()  # type: ignore[attr-defined]


def grain_logger(execution_id: str, app_name: str, grain_name: str) -> logging.Logger:
    """A logger for one invocation whose records carry ``execution_id``, ``app``, ``grain``.

    It is a fresh logger per invocation (not registered in the logging tree, so none
    accumulate) whose parent is ``sand.grain.<app>.<grain>``: handlers and levels
    configured there or on ``sand.grain`` apply.
    """
    name = f"{GRAIN_LOGGER}.{app_name}.{grain_name}"
    logger = _InvocationLogger(name)
    logger.parent = logging.getLogger(name)
    logger.addFilter(_ExecutionFields(execution_id, app_name, grain_name))
    return logger


class Context:
    """What a grain may know and do during one invocation. Not thread-safe for add_next.

    - ``execution_id``, ``grain_name``, ``app_name``: who and where;
    - ``logger``: a :class:`logging.Logger` whose records carry the execution id;
    - ``remaining_time_ms()``: time left before the invocation is stopped;
    - ``add_next(grain)`` / ``send(grain)``: choose a next grain at run time (only
      among the grain's ``potentialNext`` in the workflow);
    - ``data``: the application's data layer (:class:`Data`);
    - ``state``: the ASL context object (``$$``) of this task (a private copy).
    """

    def __init__(
        self,
        *,
        execution_id: str,
        grain_name: str,
        app_name: str,
        deadline: float,
        data: Data,
        potential_next: Iterable[str] = (),
        state: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``deadline`` is a ``clock()`` reading (seconds) after which the grain is stopped."""
        self._execution_id = execution_id
        self._grain_name = grain_name
        self._app_name = app_name
        self._deadline = deadline
        self._clock = clock
        self._data = data
        self._potential_next = frozenset(potential_next)
        self._state: dict[str, Any] = copy.deepcopy(dict(state or {}))
        self._next: list[str] | None = None
        self._logger = grain_logger(execution_id, app_name, grain_name)

    @property
    def execution_id(self) -> str:
        return self._execution_id

    @property
    def grain_name(self) -> str:
        return self._grain_name

    @property
    def app_name(self) -> str:
        return self._app_name

    @property
    def logger(self) -> logging.Logger:
        return self._logger

    @property
    def data(self) -> Data:
        return self._data

    @property
    def state(self) -> dict[str, Any]:
        """The ASL context object (``$$``): Execution, State, StateMachine, Task, Map."""
        return self._state

    @property
    def task_token(self) -> str | None:
        """The task token of a callback task (a Task whose Resource ends in
        ``.waitForTaskToken``; ``$$.Task.Token``), None in any other task. Hand it to whoever
        decides the task's outcome: they send it with ``sand task success|failure TOKEN``
        (or ``POST /v1/tasks/{token}/success``), and until then the execution waits."""
        task = self._state.get("Task")
        token = task.get("Token") if isinstance(task, dict) else None
        return token if isinstance(token, str) else None

    @property
    def next_grains(self) -> tuple[str, ...] | None:
        """The grains chosen with :meth:`add_next`, in order; None when none was chosen."""
        return None if self._next is None else tuple(self._next)

    def remaining_time_ms(self) -> int:
        """Milliseconds left before the deadline (0 once it has passed)."""
        return max(0, int((self._deadline - self._clock()) * 1000))

    def add_next(self, grain: str) -> None:
        """Send this invocation's output to ``grain`` too (dynamic next).

        Only grains listed in this grain's ``potentialNext`` are allowed; anything
        else raises :class:`NextGrainError` (a ValueError) naming the grain and the
        allowed set. Choosing the same grain twice sends once.
        """
        if grain not in self._potential_next:
            allowed = ", ".join(sorted(self._potential_next)) or "none"
            raise NextGrainError(
                f"grain '{self._grain_name}' cannot send to '{grain}': "
                f"not in its potentialNext (allowed: {allowed})"
            )
        if self._next is None:
            self._next = []
        if grain not in self._next:
            self._next.append(grain)

    def send(self, grain: str) -> None:
        """Same as :meth:`add_next` (the SAND paper's name for it)."""
        self.add_next(grain)
