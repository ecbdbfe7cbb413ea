"""An application's triggers (decision 0034): schedules and Kafka topics that start its
executions without a client::

    triggers:                         # optional; trigger name -> trigger (at most 20)
      nightly:                        # name: [A-Za-z0-9][A-Za-z0-9_-]{0,63}
        schedule: "cron(0 3 * * 1-5)" # or "rate(5 minutes)"
        timezone: Europe/Paris        # IANA zone; default UTC; cron schedules only
        workflow: main                # default: the app's default workflow
        input: {"report": "daily"}    # any JSON value; default {}; each firing's input
        missed: run_once              # run_once (default) | skip
      orders:
        topic: orders                 # each record of this Kafka topic starts one execution
        workflow: main

Python holds the rules (:func:`check_triggers`, called by :func:`sand.app.load_app`); the
host agent fires the triggers from the description (:func:`to_description`, printed by
``sand_worker.describe``). Both sides compute firing times — here :func:`next_firings`
(cronsim, zoneinfo), in the agent cron-utils — and ``tests/vectors/schedules.json`` holds
both to the same answers. The schedules themselves (syntax, parsing, firing times) are
:mod:`sand.schedules`, whose names are also importable from here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar, Final

from sand import contracts
from sand.schedules import (
    DEFAULT_TIMEZONE,
    Rate,
    Schedule,
    ScheduleError,
    next_firings,
    parse_schedule,
    zone_of,
)

# Re-exported: the schedule names stay importable from here, where they were first (public SDK).
from sand.schedules import MAX_RATE_DAYS as MAX_RATE_DAYS
from sand.schedules import Cron as Cron
from sand.schedules import format_instant as format_instant

MAX_TRIGGERS: Final = 20
TRIGGER_NAME: Final = contracts.TRIGGER_NAME
# Kafka's own rule for a topic name; SAND's topics and Kafka's internal ones are off limits
TOPIC_NAME: Final = re.compile(r"[A-Za-z0-9._-]{1,249}")
RESERVED_TOPIC_PREFIXES: Final = ("sand.", "__")

# the fields of a trigger in app.yaml
SCHEDULE: Final = "schedule"
TIMEZONE: Final = "timezone"
WORKFLOW: Final = "workflow"
INPUT: Final = "input"
MISSED: Final = "missed"
TOPIC: Final = "topic"
FIELDS: Final = (SCHEDULE, TIMEZONE, WORKFLOW, INPUT, MISSED, TOPIC)


class TriggerKind(StrEnum):
    SCHEDULE = "schedule"
    TOPIC = "topic"


class Missed(StrEnum):
    """What a schedule does with firings that passed while nothing could run them."""

    RUN_ONCE = "run_once"  # one execution, for the latest missed firing time
    SKIP = "skip"  # none: a firing more than 60 s late is skipped


# -- triggers -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScheduleTrigger:
    """Starts an execution of ``workflow`` with ``input`` at each firing of ``schedule``."""

    KIND: ClassVar[TriggerKind] = TriggerKind.SCHEDULE

    name: str
    schedule: Schedule
    workflow: str
    input: Any = field(default_factory=dict, hash=False)
    timezone: str = DEFAULT_TIMEZONE
    missed: Missed = Missed.RUN_ONCE

    def next_firings(self, after: datetime, count: int = 1) -> list[datetime]:
        """The next ``count`` firings strictly after ``after``, in UTC."""
        return next_firings(str(self.schedule), self.timezone, after, count)

    def to_description(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.KIND.value,
            "schedule": str(self.schedule),
            "timezone": self.timezone,
            "workflow": self.workflow,
            "input": self.input,
            "missed": self.missed.value,
        }


@dataclass(frozen=True, slots=True)
class TopicTrigger:
    """Starts an execution of ``workflow`` for each record of Kafka topic ``topic``, the
    record's value (JSON) as its input."""

    KIND: ClassVar[TriggerKind] = TriggerKind.TOPIC

    name: str
    topic: str
    workflow: str

    def to_description(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.KIND.value,
            "topic": self.topic,
            "workflow": self.workflow,
        }


Trigger = ScheduleTrigger | TopicTrigger


def own_topic(app: str, topic: str) -> bool:
    """Whether ``app`` may read ``topic``: its own name or ``<app>.<name>``. App names belong
    to their users (decision 0017), topic names to nobody: without this rule one tenant's
    trigger could read another's topic. The agent applies the same rule at deploy."""
    return topic == app or topic.startswith(app + ".")


def to_description(triggers: Sequence[Trigger]) -> list[dict[str, Any]]:
    """The triggers as the app's description lists them: sorted by name, defaults filled."""
    return [t.to_description() for t in sorted(triggers, key=lambda t: t.name)]


@dataclass(frozen=True, slots=True)
class AppFacts:
    """What of the application its triggers are checked against."""

    workflows: tuple[str, ...]  # the workflows the manifest declares
    default_workflow: str | None  # None: several and none called "main"
    payload_limit_bytes: int  # limits.payload_kb, in bytes
    name: str | None = None  # the app's name, when valid: a topic trigger reads its own topics

    @property
    def payload_kb(self) -> int:
        return self.payload_limit_bytes // 1024


Report = Callable[[str, str], None]  # (field, rule broken)


def check_triggers(section: Any, app: AppFacts, report: Report) -> tuple[Trigger, ...]:
    """The ``triggers`` mapping of a manifest as typed triggers, sorted by name; each broken
    rule goes to ``report`` with its field (``triggers.<name>.<field>``), and a trigger that
    breaks one is left out."""
    if section is None:
        return ()
    if not isinstance(section, dict):
        report("triggers", f"must be a mapping of trigger name -> trigger, got {_kind_of(section)}")
        return ()
    if len(section) > MAX_TRIGGERS:
        report("triggers", f"at most {MAX_TRIGGERS} triggers, got {len(section)}")
    triggers: list[Trigger] = []
    for name, value in section.items():
        if not isinstance(name, str) or not TRIGGER_NAME.fullmatch(name):
            report(f"triggers.{name}", f"name must match {TRIGGER_NAME.pattern}")
            continue
        trigger = _TriggerCheck(name, app, report).check(value)
        if trigger is not None:
            triggers.append(trigger)
    return tuple(sorted(triggers, key=lambda t: t.name))


class _TriggerCheck:
    """The rules of one trigger; ``ok`` turns False at the first one broken."""

    def __init__(self, name: str, app: AppFacts, report: Report) -> None:
        self.name = name
        self.app = app
        self._report = report
        self.ok = True

    def problem(self, key: str | None, rule: str) -> None:
        self.ok = False
        self._report(f"triggers.{self.name}" + (f".{key}" if key else ""), rule)

    def check(self, value: Any) -> Trigger | None:
        if not isinstance(value, dict):
            self.problem(
                None, f"must be a mapping with {SCHEDULE} or {TOPIC}, got {_kind_of(value)}"
            )
            return None
        for key in value:
            if key not in FIELDS:
                self.problem(str(key), f"unknown field (allowed: {', '.join(FIELDS)})")
        if (SCHEDULE in value) == (TOPIC in value):
            given = "both" if SCHEDULE in value else "neither"
            self.problem(
                None,
                f"needs exactly one of {SCHEDULE} (a schedule) or {TOPIC} (a Kafka topic), "
                f"got {given}",
            )
            return None
        workflow = self.workflow(value.get(WORKFLOW))
        trigger = (
            self.schedule(value, workflow) if SCHEDULE in value else self.topic(value, workflow)
        )
        return trigger if self.ok else None

    def workflow(self, value: Any) -> str:
        known = self.app.workflows
        if not known:
            return value if isinstance(value, str) else ""  # workflows: already reported
        if value is None:
            if self.app.default_workflow is None:
                from sand.app import DEFAULT_WORKFLOW

                self.problem(
                    WORKFLOW,
                    f"no workflow given and the app has several ({', '.join(sorted(known))}) "
                    f"and none is called '{DEFAULT_WORKFLOW}'",
                )
                return ""
            return self.app.default_workflow
        if not isinstance(value, str):
            self.problem(WORKFLOW, f"must be a workflow's name, got {_kind_of(value)}")
            return ""
        if value not in known:
            from sand.suggest import did_you_mean

            self.problem(
                WORKFLOW,
                f"no workflow called '{value}' (the app has: {', '.join(sorted(known))})"
                + did_you_mean(value, known),
            )
        return value

    def schedule(self, value: dict[Any, Any], workflow: str) -> ScheduleTrigger | None:
        text = value[SCHEDULE]
        schedule: Schedule | None = None
        if not isinstance(text, str):
            self.problem(
                SCHEDULE, f"must be a string, rate(...) or cron(...), got {_kind_of(text)}"
            )
        else:
            try:
                schedule = parse_schedule(text)
            except ScheduleError as exc:
                self.problem(SCHEDULE, str(exc))
        timezone = self.timezone(value, schedule)
        missed = value.get(MISSED, Missed.RUN_ONCE.value)
        if not isinstance(missed, str) or missed not in tuple(Missed):
            choices = " or ".join(m.value for m in Missed)
            self.problem(MISSED, f"must be {choices}, got {missed!r}")
        payload = self.input(value.get(INPUT, {}))
        if schedule is None or not self.ok:
            return None
        return ScheduleTrigger(self.name, schedule, workflow, payload, timezone, Missed(missed))

    def timezone(self, value: dict[Any, Any], schedule: Schedule | None) -> str:
        if TIMEZONE not in value:
            return DEFAULT_TIMEZONE
        zone = value[TIMEZONE]
        if isinstance(schedule, Rate):
            self.problem(
                TIMEZONE,
                "applies to cron schedules only (a rate fires every N units from the Unix "
                "epoch, in UTC)",
            )
        elif not isinstance(zone, str):
            self.problem(TIMEZONE, f"must be an IANA time zone's name, got {_kind_of(zone)}")
        else:
            try:
                zone_of(zone)
            except ScheduleError as exc:
                self.problem(TIMEZONE, str(exc))
        return zone if isinstance(zone, str) else DEFAULT_TIMEZONE

    def input(self, payload: Any) -> Any:
        problem = _json_problem(payload)
        if problem is not None:
            self.problem(INPUT, f"must be a JSON value: {problem}")
            return payload
        size = len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode())
        if size > self.app.payload_limit_bytes:
            self.problem(
                INPUT,
                f"its JSON is {size} bytes, over the app's payload limit of "
                f"{self.app.payload_kb} KiB (limits.payload_kb)",
            )
        return payload

    def topic(self, value: dict[Any, Any], workflow: str) -> TopicTrigger | None:
        for key, rule in (
            (TIMEZONE, "applies to cron schedules only"),
            (MISSED, "applies to schedule triggers only"),
            (INPUT, "applies to schedule triggers only (a topic's record is the input)"),
        ):
            if key in value:
                self.problem(key, rule)
        topic = value[TOPIC]
        if not isinstance(topic, str):
            self.problem(TOPIC, f"must be a Kafka topic's name, got {_kind_of(topic)}")
        elif not TOPIC_NAME.fullmatch(topic) or topic in (".", ".."):
            self.problem(
                TOPIC,
                f"'{topic}' is not a Kafka topic name: 1 to 249 of A-Z a-z 0-9 . _ -, "
                "not '.' or '..'",
            )
        elif topic.startswith(RESERVED_TOPIC_PREFIXES):
            self.problem(
                TOPIC,
                f"'{topic}' is reserved: topics starting with 'sand.' are SAND's own, "
                "with '__' Kafka's",
            )
        elif self.app.name is not None and not own_topic(self.app.name, topic):
            self.problem(
                TOPIC,
                f"'{topic}' is not a topic of app '{self.app.name}': a topic trigger reads "
                f"'{self.app.name}' or '{self.app.name}.<name>' only (app names are owned, "
                "topic names are not)",
            )
        if not self.ok or not isinstance(topic, str):
            return None
        return TopicTrigger(self.name, topic, workflow)


def _json_problem(value: Any, path: str = "") -> str | None:
    """Why ``value`` (as YAML loaded it) is not a JSON value, naming where; None if it is."""
    where = f" at {path}" if path else ""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} is not a JSON number{where}"
    if isinstance(value, list):
        for i, item in enumerate(value):
            problem = _json_problem(item, f"{path}[{i}]")
            if problem is not None:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"the key {key!r}{where} is not a string"
            problem = _json_problem(item, f"{path}.{key}" if path else key)
            if problem is not None:
                return problem
        return None
    return f"{type(value).__name__} {value!r}{where} has no JSON type (quote it)"


def _kind_of(value: Any) -> str:
    from sand.placement import kind_of

    return kind_of(value)
