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
both to the same answers.

A schedule is ``rate(N unit)``, firing at ``epoch + k * N * unit`` (UTC, aligned to the
Unix epoch), or ``cron(F)`` with F the 5 fields of Unix cron (minute hour day-of-month
month day-of-week) read in the trigger's time zone. Only that syntax: ``*``, numbers,
ranges ``a-b``, steps ``*/n`` and ``a-b/n``, lists ``a,b``, month names JAN-DEC and day
names SUN-SAT (any case), day-of-week 0-7 (0 and 7 are Sunday). When both day fields are
restricted (neither is exactly ``*``), a day matches when either does.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from enum import StrEnum
from typing import Any, ClassVar, Final

from sand import contracts

MAX_TRIGGERS: Final = 20
TRIGGER_NAME: Final = contracts.TRIGGER_NAME
# Kafka's own rule for a topic name; SAND's topics and Kafka's internal ones are off limits
TOPIC_NAME: Final = re.compile(r"[A-Za-z0-9._-]{1,249}")
RESERVED_TOPIC_PREFIXES: Final = ("sand.", "__")
DEFAULT_TIMEZONE: Final = "UTC"
# The longest period of a rate: beyond it the firings (epoch-aligned) would be years apart
# and the agent's millisecond arithmetic would come near its bounds.
MAX_RATE_DAYS: Final = 3650

# the fields of a trigger in app.yaml
SCHEDULE: Final = "schedule"
TIMEZONE: Final = "timezone"
WORKFLOW: Final = "workflow"
INPUT: Final = "input"
MISSED: Final = "missed"
TOPIC: Final = "topic"
FIELDS: Final = (SCHEDULE, TIMEZONE, WORKFLOW, INPUT, MISSED, TOPIC)

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


class TriggerKind(StrEnum):
    SCHEDULE = "schedule"
    TOPIC = "topic"


class Missed(StrEnum):
    """What a schedule does with firings that passed while nothing could run them."""

    RUN_ONCE = "run_once"  # one execution, for the latest missed firing time
    SKIP = "skip"  # none: a firing more than 60 s late is skipped


class ScheduleError(ValueError):
    """A schedule or time zone SAND does not accept; the message says which rule."""


# -- schedules ----------------------------------------------------------------------------------

_RATE = re.compile(r"rate\((\S*) (\S*)\)")
_RATE_UNITS: Final = {
    "minute": 60,
    "minutes": 60,
    "hour": 3600,
    "hours": 3600,
    "day": 86400,
    "days": 86400,
}
_CRON = re.compile(r"cron\((.*)\)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Rate:
    """``rate(N unit)``: every N minutes, hours or days from the Unix epoch, in UTC."""

    value: int
    unit: str  # as written: minute, minutes, hour, hours, day or days

    @property
    def period(self) -> timedelta:
        return timedelta(seconds=self.value * _RATE_UNITS[self.unit])

    def __str__(self) -> str:
        return f"rate({self.value} {self.unit})"

    def firings(self, after: datetime, count: int) -> list[datetime]:
        period = self.period
        k = (after - _EPOCH) // period + 1
        return [_EPOCH + (k + i) * period for i in range(count)]


_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")


@dataclass(frozen=True, slots=True)
class _CronField:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()  # accepted names, the first one standing for ``low``


_CRON_FIELDS: Final = (
    _CronField("minute", 0, 59),
    _CronField("hour", 0, 23),
    _CronField("day-of-month", 1, 31),
    _CronField("month", 1, 12, _MONTHS),
    _CronField("day-of-week", 0, 7, _DAYS),
)
_FIELD_NAMES: Final = " ".join(f.name for f in _CRON_FIELDS)
_SIX_FIELDS: Final = (
    f"SAND's cron has 5 fields ({_FIELD_NAMES}); EventBridge's year field and '?' are not supported"
)
_SYNTAX: Final = "*, numbers, ranges a-b, steps */n and a-b/n, lists a,b"
# one item of a list: *, */n, v, v-v, v-v/n (v a number or a name; checked after)
_ITEM = re.compile(r"\*(?:/(\d+))?|(\w+)(?:-(\w+)(?:/(\d+))?)?", re.ASCII)


@dataclass(frozen=True, slots=True)
class Cron:
    """``cron(F)``: the 5 fields of Unix cron, read in the trigger's time zone."""

    fields: tuple[str, ...]  # upper case, as cronsim and cron-utils both read them

    def __str__(self) -> str:
        return f"cron({' '.join(self.fields)})"

    def firings(self, after: datetime, zone: tzinfo, count: int) -> list[datetime]:
        """The first ``count`` firings strictly after ``after``, in UTC (fewer when the
        expression has no more within 50 years, cronsim's horizon)."""
        from cronsim import CronSim

        walk = CronSim(" ".join(self.fields), after.astimezone(zone))
        # cronsim (as Vixie cron) takes a day field that starts with '*' ('*/2') as
        # unrestricted; SAND's rule (and cron-utils') is that only '*' itself is.
        walk.day_and = self.fields[2] == "*" or self.fields[4] == "*"
        found: list[datetime] = []
        while len(found) < count:
            try:
                local = next(walk)
            except StopIteration:
                break
            instant = local.astimezone(UTC)
            # A walk in wall-clock time (cronsim's, for fixed hours and minutes) that starts
            # in the second pass of a repeated hour first finds that hour's first pass.
            if instant > after:
                found.append(instant)
        return found


Schedule = Rate | Cron


def parse_schedule(text: str) -> Schedule:
    """``rate(N unit)`` or ``cron(F)``; raises :class:`ScheduleError` naming the rule broken."""
    rate = _RATE.fullmatch(text)
    if rate is not None:
        return _rate(rate[1], rate[2])
    if text.startswith("rate("):
        raise ScheduleError(
            f"'{text}' is not a rate: write rate(N unit), one space between, unit minute(s), "
            "hour(s) or day(s), e.g. rate(5 minutes)"
        )
    cron = _CRON.fullmatch(text)
    if cron is not None:
        return Cron(_cron_fields(cron[1]))
    raise ScheduleError(
        f"'{text}' is not a schedule: write rate(N unit), e.g. rate(5 minutes), or cron(F) with "
        f"the 5 fields of Unix cron ({_FIELD_NAMES}), e.g. cron(0 3 * * 1-5)"
    )


def _rate(value: str, unit: str) -> Rate:
    if unit not in _RATE_UNITS:
        hint = " (the shortest rate is 1 minute)" if unit.startswith("second") else ""
        raise ScheduleError(
            f"rate({value} {unit}): the unit must be minute, minutes, hour, hours, day or days, "
            f"got '{unit}'{hint}"
        )
    if not value.isascii() or not value.isdigit() or value.startswith("0"):
        raise ScheduleError(
            f"rate({value} {unit}): N must be an integer >= 1 (no sign, no leading zero), "
            f"got '{value}'"
        )
    rate = Rate(int(value), unit)
    if rate.period > timedelta(days=MAX_RATE_DAYS):
        raise ScheduleError(
            f"rate({value} {unit}): the period must be at most {MAX_RATE_DAYS} days"
        )
    return rate


def _cron_fields(inner: str) -> tuple[str, ...]:
    text = f"cron({inner})"
    if inner.startswith("@"):
        raise ScheduleError(
            f"{text}: macros such as @daily are not supported: write the 5 fields "
            f"({_FIELD_NAMES}), e.g. cron(0 0 * * *) for @daily"
        )
    fields = inner.split()
    if len(fields) == 6:
        raise ScheduleError(f"{text}: {_SIX_FIELDS}")
    if len(fields) != 5:
        raise ScheduleError(f"{text}: SAND's cron has 5 fields ({_FIELD_NAMES}), got {len(fields)}")
    if not re.fullmatch(r"[^\s]+(?: +[^\s]+)*", inner):
        raise ScheduleError(
            f"{text}: the 5 fields ({_FIELD_NAMES}) are separated by spaces, with none before "
            "the first or after the last"
        )
    upper = tuple(f.upper() for f in fields)
    for spec, value in zip(_CRON_FIELDS, upper, strict=True):
        problem = _field_problem(spec, value)
        if problem is not None:
            raise ScheduleError(f"{text}: {spec.name} '{value}': {problem}")
    _check_with_cronsim(text, upper)
    return upper


def _field_problem(spec: _CronField, value: str) -> str | None:
    """Why one field (upper case) is not SAND's cron, or None: the syntax, then each number
    or name in range and each range in order."""
    if "?" in value:
        return f"'?' is not supported (use *); {_SIX_FIELDS}"
    for char, what in (("L", "L (last)"), ("W", "W (weekday)"), ("#", "# (nth weekday)")):
        if char in value and not any(n for n in spec.names if char in n and n in value):
            return f"{what} is not supported: SAND's cron is Unix cron ({_SYNTAX})"
    for item in value.split(","):
        match = _ITEM.fullmatch(item)
        if match is None:
            names = f"; {spec.names[0]}-{spec.names[-1]} as names" if spec.names else ""
            return f"'{item}' is not valid: each field is {_SYNTAX}{names}"
        star_step, first, last, step = match.groups()
        for number in (star_step, step):
            if number is not None and int(number) < 1:
                return f"a step must be >= 1, got {number}"
        if first is None:
            continue
        low = _field_value(spec, first)
        if isinstance(low, str):
            return low
        if last is None:
            continue
        high = _field_value(spec, last)
        if isinstance(high, str):
            return high
        if high < low:
            sunday = " (Sunday is 7 too)" if spec.names is _DAYS and high == 0 else ""
            return f"the range {first}-{last} goes backwards{sunday}"
    return None


def _field_value(spec: _CronField, token: str) -> int | str:
    """The number ``token`` stands for in field ``spec``, or why it stands for none."""
    if token.isdigit():
        number = int(token)
        if spec.low <= number <= spec.high:
            return number
        return f"{token} is out of range {spec.low}-{spec.high}"
    if token in spec.names:
        return spec.low + spec.names.index(token)
    if spec.names:
        return f"'{token}' is neither a number nor a name ({', '.join(spec.names)})"
    return f"'{token}' is not a number"


def _check_with_cronsim(text: str, fields: tuple[str, ...]) -> None:
    """What the syntax cannot tell: that the expression ever fires (a day of month that no
    month named has, such as 30 in February)."""
    from cronsim import CronSim, CronSimError

    try:
        CronSim(" ".join(fields), datetime(2000, 1, 1))
    except CronSimError as exc:
        reason = str(exc)
        if reason == "Bad day-of-month":
            reason = f"day-of-month '{fields[2]}': no month it names ('{fields[3]}') has that day"
        raise ScheduleError(f"{text}: {reason}") from None


def zone_of(name: str) -> tzinfo:
    """The IANA time zone ``name``; raises :class:`ScheduleError` for anything else."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    # "localtime" is whatever zone the host runs in: not the same on every host
    if name != "localtime":
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    raise ScheduleError(f"unknown time zone '{name}': use an IANA zone such as Europe/Paris or UTC")


def next_firings(schedule: str, timezone: str, after: datetime, count: int) -> list[datetime]:
    """The first ``count`` firing instants of ``schedule`` strictly after ``after`` (an aware
    datetime), in UTC with whole seconds. ``timezone`` is where a cron schedule is read; a
    rate takes only UTC. Raises :class:`ScheduleError` for a schedule or zone SAND refuses.

    A cron time that a DST change skips fires at the first minute that exists after it (a
    daily 02:30 fires at 03:00 on the day clocks jump from 02:00 to 03:00); one that occurs
    twice fires once, at its first occurrence. Both only for a cron whose minute and hour
    fields are fixed: one with ``*`` there runs on the instant timeline (cronsim's rules,
    after Debian cron)."""
    if after.tzinfo is None:
        raise ValueError(f"after must be an aware datetime, got {after!r}")
    parsed = parse_schedule(schedule)
    if isinstance(parsed, Rate):
        if timezone != DEFAULT_TIMEZONE:
            raise ScheduleError(f"{schedule}: a time zone applies to cron schedules only")
        return parsed.firings(after, count)
    return parsed.firings(after, zone_of(timezone), count)


def format_instant(instant: datetime) -> str:
    """``2026-11-27T02:00:00Z``: an instant in UTC to the second, as the contracts write it."""
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
