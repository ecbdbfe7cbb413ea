"""Schedules of triggers (decision 0034): parsing ``rate(...)`` and ``cron(...)`` and
computing their firing times.

A schedule is ``rate(N unit)``, firing at ``epoch + k * N * unit`` (UTC, aligned to the
Unix epoch), or ``cron(F)`` with F the 5 fields of Unix cron (minute hour day-of-month
month day-of-week) read in the trigger's time zone. Only that syntax: ``*``, numbers,
ranges ``a-b``, steps ``*/n`` and ``a-b/n``, lists ``a,b``, month names JAN-DEC and day
names SUN-SAT (any case), day-of-week 0-7 (0 and 7 are Sunday). When both day fields are
restricted (neither is exactly ``*``), a day matches when either does.

The host agent computes the same firings (cron-utils, ``Schedule.java``);
``tests/vectors/schedules.json`` holds both to the same answers. The trigger rules that
use these are in :mod:`sand.triggers`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Final

DEFAULT_TIMEZONE: Final = "UTC"
# The longest period of a rate: beyond it the firings (epoch-aligned) would be years apart
# and the agent's millisecond arithmetic would come near its bounds.
MAX_RATE_DAYS: Final = 3650

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


class ScheduleError(ValueError):
    """A schedule or time zone SAND does not accept; the message says which rule."""


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
