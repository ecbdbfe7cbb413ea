"""Triggers (decision 0034): the schedules' known answers (``tests/vectors/schedules.json``,
which the agent's cron-utils is held to as well), every rule of ``triggers`` in app.yaml as
load_app reports it, the description the host agent reads, the schema's agreement with the
loader, and the history event that records what started an execution."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from sand import contracts
from sand.app import AppError, load_app
from sand.schemas import load_schema
from sand.triggers import (
    MAX_TRIGGERS,
    TRIGGER_NAME,
    Cron,
    Missed,
    Rate,
    ScheduleError,
    ScheduleTrigger,
    TopicTrigger,
    format_instant,
    next_firings,
    parse_schedule,
    to_description,
    zone_of,
)
from sand_workflows import history

from .conftest import ECHO_GRAIN, REPO, AppFactory

VECTORS = json.loads((REPO / "tests/vectors/schedules.json").read_text())
WORKFLOW = "entry: first\ngrains:\n  first: {}\n"
FILES = {
    "grains/first.py": ECHO_GRAIN,
    "workflows/main.yaml": WORKFLOW,
    "workflows/b.yaml": WORKFLOW,
}


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# -- the known answers --------------------------------------------------------------------------


def test_vectors_coverTheContractsCases() -> None:
    """At least 12 valid and 8 invalid cases; every case across a DST change says in its
    note what SAND computes (the agent's cron-utils is held to the same answers)."""
    valid, invalid = VECTORS["valid"], VECTORS["invalid"]
    assert len(valid) >= 12 and len(invalid) >= 8
    schedules = {v["schedule"] for v in valid}
    for needed in ("rate(1 minute)", "rate(5 minutes)", "rate(2 hours)", "rate(1 day)"):
        assert needed in schedules
    for case in valid:
        zone = zone_of(case["timezone"])
        offsets = {instant(t).astimezone(zone).utcoffset() for t in (case["after"], *case["next"])}
        if len(offsets) > 1:
            assert "note" in case, case


@pytest.mark.parametrize(
    "case", VECTORS["valid"], ids=lambda c: f"{c['schedule']} {c['timezone']} {c['after']}"
)
def test_validVector_nextThreeFirings_areTheKnownAnswers(case: dict[str, Any]) -> None:
    """The first 3 firings strictly after ``after``, UTC, to the second."""
    found = next_firings(case["schedule"], case["timezone"], instant(case["after"]), 3)
    assert [format_instant(f) for f in found] == case["next"]
    assert all(f.tzinfo is not None and f.utcoffset() == UTC.utcoffset(None) for f in found)


@pytest.mark.parametrize(
    "case", VECTORS["invalid"], ids=lambda c: f"{c['schedule']} {c['timezone']}"
)
def test_invalidVector_isRefused_withAMessageNamingIt(case: dict[str, Any]) -> None:
    """Refused with a message that names the schedule or the zone."""
    with pytest.raises(ScheduleError) as info:
        next_firings(case["schedule"], case["timezone"], instant("2026-01-01T00:00:00Z"), 3)
    message = str(info.value)
    assert case["schedule"] in message or case["timezone"] in message, message


@pytest.mark.parametrize(
    ("schedule", "said"),
    [
        (
            "cron(0 12 * * ? *)",
            "SAND's cron has 5 fields (minute hour day-of-month month "
            "day-of-week); EventBridge's year field and '?' are not supported",
        ),
        ("cron(0 12 ? * MON)", "day-of-month '?': '?' is not supported (use *)"),
        ("cron(0 12 L * *)", "L (last) is not supported"),
        ("cron(0 12 * * MON#2)", "# (nth weekday) is not supported"),
        ("cron(0 12 15W * *)", "W (weekday) is not supported"),
        ("cron(@daily)", "macros such as @daily are not supported"),
        ("cron(60 * * * *)", "minute '60': 60 is out of range 0-59"),
        ("cron(0 0 * * FRI-MON)", "the range FRI-MON goes backwards"),
        ("cron(5/15 * * * *)", "'5/15' is not valid"),
        ("cron(0 0 30 2 *)", "no month it names ('2') has that day"),
        ("rate(30 seconds)", "(the shortest rate is 1 minute)"),
        ("rate(0 minutes)", "N must be an integer >= 1"),
        ("daily", "'daily' is not a schedule"),
    ],
)
def test_parseSchedule_refusal_saysWhichRule(schedule: str, said: str) -> None:
    with pytest.raises(ScheduleError, match=re.escape(said)):
        parse_schedule(schedule)


def test_parseSchedule_normalizesCron_keepsRateAsWritten() -> None:
    """Cron fields are upper-cased and single-spaced (what the agent reads); a rate keeps
    the unit's form it was written in."""
    assert str(parse_schedule("cron(0  3 * jan-mar mon-fri)")) == "cron(0 3 * JAN-MAR MON-FRI)"
    assert parse_schedule("rate(1 hours)") == Rate(1, "hours")
    assert isinstance(parse_schedule("cron(*/5 * * * *)"), Cron)


def test_nextFirings_needsAnAwareAfter() -> None:
    with pytest.raises(ValueError, match="aware"):
        next_firings("rate(1 minute)", "UTC", datetime(2026, 1, 1), 1)


def test_longestTriggerName_makesAValidExecutionName() -> None:
    """A schedule's execution is named ``<trigger>-<YYYYMMDDTHHMMSSZ>``: within the
    execution name rule for every trigger name."""
    name = "n" * 64
    assert TRIGGER_NAME.fullmatch(name)
    firing = instant("2026-11-27T02:00:00Z").strftime("%Y%m%dT%H%M%SZ")
    # an execution's name follows the execution id rule (NAME_EXECUTION)
    assert contracts.EXECUTION_ID.fullmatch(f"{name}-{firing}")


# -- app.yaml -----------------------------------------------------------------------------------


def app_with(make_app: AppFactory, triggers: str, extra: str = "", name: str = "app") -> Path:
    """An app with workflows main and b and the ``triggers`` section given (YAML, indented
    by the caller as under ``triggers:``)."""
    text = (
        "name: shop\ngrains:\n  first: grains/first.py\n"
        "workflows:\n  main: workflows/main.yaml\n  b: workflows/b.yaml\n" + extra
    )
    if triggers:
        text += "triggers:\n" + triggers
    return make_app(text, FILES, name=name)


def problems(root: Path) -> list[str]:
    with pytest.raises(AppError) as info:
        load_app(root)
    prefix = f"{root}/app.yaml: "
    return [str(p).removeprefix(prefix) for p in info.value.problems]


def test_triggers_loadTyped_sortedByName_withDefaults(make_app: AppFactory) -> None:
    """A schedule gets UTC, the default workflow, {} and run_once; a topic its workflow."""
    root = app_with(
        make_app,
        "  tick:\n    schedule: rate(5 minutes)\n"
        "  orders:\n    topic: shop.orders\n    workflow: b\n"
        '  nightly:\n    schedule: "cron(0 3 * * 1-5)"\n    timezone: Europe/Paris\n'
        "    input: {report: daily}\n    missed: skip\n",
    )
    app = load_app(root)
    assert [t.name for t in app.triggers] == ["nightly", "orders", "tick"]
    nightly, orders, tick = app.triggers
    assert nightly == ScheduleTrigger(
        "nightly",
        Cron(("0", "3", "*", "*", "1-5")),
        "main",
        {"report": "daily"},
        "Europe/Paris",
        Missed.SKIP,
    )
    assert orders == TopicTrigger("orders", "shop.orders", "b")
    assert tick == ScheduleTrigger("tick", Rate(5, "minutes"), "main", {}, "UTC", Missed.RUN_ONCE)
    after = instant("2026-03-27T00:00:00Z")
    assert [format_instant(t) for t in nightly.next_firings(after, 2)] == [
        "2026-03-27T02:00:00Z",
        "2026-03-30T01:00:00Z",
    ]


def test_noTriggers_isAnEmptyTuple(make_app: AppFactory) -> None:
    assert load_app(app_with(make_app, "")).triggers == ()


@pytest.mark.parametrize(
    ("triggers", "expected"),
    [
        (
            "  t:\n    schedule: rate(1 day)\n    topic: shop.orders\n",
            "triggers.t: needs exactly one of schedule (a schedule) or topic (a Kafka topic), "
            "got both",
        ),
        (
            "  t:\n    workflow: main\n",
            "triggers.t: needs exactly one of schedule (a schedule) or topic (a Kafka topic), "
            "got neither",
        ),
        (
            "  t:\n    schedule: rate(1 day)\n    every: 5\n",
            "triggers.t.every: unknown field (allowed: schedule, timezone, workflow, input, "
            "missed, topic)",
        ),
        (
            "  -bad:\n    schedule: rate(1 day)\n",
            "triggers.-bad: name must match [A-Za-z0-9][A-Za-z0-9_-]{0,63}",
        ),
        ("  t:\n", "triggers.t: must be a mapping with schedule or topic, got nothing"),
        (
            "  t:\n    schedule: rate(5 minutes)\n    timezone: Europe/Paris\n",
            "triggers.t.timezone: applies to cron schedules only (a rate fires every N units "
            "from the Unix epoch, in UTC)",
        ),
        (
            '  t:\n    schedule: "cron(0 3 * * *)"\n    timezone: Europe/Pariss\n',
            "triggers.t.timezone: unknown time zone 'Europe/Pariss': use an IANA zone such as "
            "Europe/Paris or UTC",
        ),
        (
            '  t:\n    schedule: "cron(0 12 * * ? *)"\n',
            "triggers.t.schedule: cron(0 12 * * ? *): SAND's cron has 5 fields (minute hour "
            "day-of-month month day-of-week); EventBridge's year field and '?' are not supported",
        ),
        (
            "  t:\n    schedule: 5\n",
            "triggers.t.schedule: must be a string, rate(...) or cron(...), got int 5",
        ),
        (
            "  t:\n    schedule: rate(1 day)\n    workflow: mian\n",
            "triggers.t.workflow: no workflow called 'mian' (the app has: b, main); "
            "did you mean 'main'?",
        ),
        (
            "  t:\n    schedule: rate(1 day)\n    missed: always\n",
            "triggers.t.missed: must be run_once or skip, got 'always'",
        ),
        (
            "  t:\n    topic: shop.orders\n    missed: skip\n",
            "triggers.t.missed: applies to schedule triggers only",
        ),
        (
            "  t:\n    topic: shop.orders\n    timezone: UTC\n",
            "triggers.t.timezone: applies to cron schedules only",
        ),
        (
            "  t:\n    topic: shop.orders\n    input: {}\n",
            "triggers.t.input: applies to schedule triggers only (a topic's record is the input)",
        ),
        (
            "  t:\n    topic: sand.results\n",
            "triggers.t.topic: 'sand.results' is reserved: topics starting with 'sand.' are "
            "SAND's own, with '__' Kafka's",
        ),
        (
            "  t:\n    topic: __consumer_offsets\n",
            "triggers.t.topic: '__consumer_offsets' is reserved: topics starting with 'sand.' "
            "are SAND's own, with '__' Kafka's",
        ),
        (
            "  t:\n    topic: '..'\n",
            "triggers.t.topic: '..' is not a Kafka topic name: 1 to 249 of A-Z a-z 0-9 . _ -, "
            "not '.' or '..'",
        ),
        (
            "  t:\n    topic: shop/eu\n",
            "triggers.t.topic: 'shop/eu' is not a Kafka topic name: 1 to 249 of A-Z a-z 0-9 "
            ". _ -, not '.' or '..'",
        ),
        (
            "  t:\n    schedule: rate(1 day)\n    input: {when: 2026-01-01}\n",
            "triggers.t.input: must be a JSON value: date datetime.date(2026, 1, 1) at when "
            "has no JSON type (quote it)",
        ),
        (
            "  t:\n    schedule: rate(1 day)\n    input: [1, .nan]\n",
            "triggers.t.input: must be a JSON value: nan is not a JSON number at [1]",
        ),
        (
            "  t:\n    schedule: rate(1 day)\n    input: {1: one}\n",
            "triggers.t.input: must be a JSON value: the key 1 is not a string",
        ),
    ],
)
def test_brokenTrigger_isReported_namingFieldAndRule(
    make_app: AppFactory, triggers: str, expected: str
) -> None:
    assert problems(app_with(make_app, triggers)) == [expected]


def test_longTopicName_isRefused(make_app: AppFactory) -> None:
    assert problems(app_with(make_app, f"  t:\n    topic: {'a' * 250}\n"))[0].startswith(
        "triggers.t.topic: 'aaa"
    )
    longest = "shop." + "a" * 244
    assert load_app(app_with(make_app, f"  t:\n    topic: {longest}\n", name="ok")).triggers


def test_topicOfAnotherApp_isRefused_ownTopicsAccepted(make_app: AppFactory) -> None:
    """App names are owned by their users, topic names are not: a trigger reads only its
    app's own topics, so a tenant cannot read another's through a trigger."""
    assert problems(app_with(make_app, "  t:\n    topic: orders\n")) == [
        "triggers.t.topic: 'orders' is not a topic of app 'shop': a topic trigger reads 'shop' "
        "or 'shop.<name>' only (app names are owned, topic names are not)"
    ]
    assert problems(app_with(make_app, "  t:\n    topic: shopping.orders\n", name="b"))
    for own in ("shop", "shop.orders", "shop.eu.orders"):
        assert load_app(app_with(make_app, f"  t:\n    topic: {own}\n", name=own)).triggers


def test_triggersNotAMapping_orTooMany_areRefused(make_app: AppFactory) -> None:
    assert problems(app_with(make_app, "  - tick\n")) == [
        "triggers: must be a mapping of trigger name -> trigger, got a list"
    ]
    many = "".join(f"  t{i}:\n    topic: shop.t{i}\n" for i in range(MAX_TRIGGERS + 1))
    assert problems(app_with(make_app, many, name="many")) == [
        "triggers: at most 20 triggers, got 21"
    ]


def test_noWorkflowGiven_usesTheDefault_orSaysThereIsNone(make_app: AppFactory) -> None:
    """Without ``workflow`` a trigger runs "main", or the only workflow; with several and
    none called main it is refused, naming them."""
    only = make_app(
        "name: shop\ngrains: {first: grains/first.py}\nworkflows: {b: workflows/b.yaml}\n"
        "triggers:\n  t: {schedule: rate(1 day)}\n",
        FILES,
        name="only",
    )
    assert load_app(only).triggers[0].workflow == "b"
    several = make_app(
        "name: shop\ngrains: {first: grains/first.py}\n"
        "workflows: {b: workflows/b.yaml, a: workflows/main.yaml}\n"
        "triggers:\n  t: {topic: shop.orders}\n",
        FILES,
        name="several",
    )
    assert problems(several) == [
        "triggers.t.workflow: no workflow given and the app has several (a, b) and none is "
        "called 'main'"
    ]


def test_input_overThePayloadLimit_isRefused(make_app: AppFactory) -> None:
    """The input's compact JSON (UTF-8) is measured against limits.payload_kb."""
    fits = json.dumps({"x": "é" * 500})  # 1,008 bytes compact
    root = app_with(
        make_app,
        f"  t:\n    schedule: rate(1 day)\n    input: {fits}\n",
        "limits: {payload_kb: 1}\n",
    )
    assert load_app(root).triggers[0].input == {"x": "é" * 500}
    too_big = json.dumps({"x": "é" * 520})  # 1,048 bytes
    root = app_with(
        make_app,
        f"  t:\n    schedule: rate(1 day)\n    input: {too_big}\n",
        "limits: {payload_kb: 1}\n",
        name="big",
    )
    assert problems(root) == [
        "triggers.t.input: its JSON is 1048 bytes, over the app's payload limit of 1 KiB "
        "(limits.payload_kb)"
    ]


def test_input_anyJsonValue_isKept(make_app: AppFactory) -> None:
    root = app_with(make_app, "  t:\n    schedule: rate(1 day)\n    input: [1, 'two', null]\n")
    assert load_app(root).triggers[0].input == [1, "two", None]


def test_everyProblem_isReportedInOneRun_andABrokenWorkflowOnlyOnce(make_app: AppFactory) -> None:
    """Triggers are checked against the workflows declared, so a trigger of a workflow whose
    file is broken adds nothing to that file's problem."""
    root = make_app(
        "name: shop\ngrains: {first: grains/first.py}\nworkflows: {main: workflows/main.yaml}\n"
        "triggers:\n"
        "  a: {schedule: 'cron(0 0 * * 8)', workflow: main}\n"
        "  b: {topic: sand.x, missed: skip}\n",
        {"grains/first.py": ECHO_GRAIN, "workflows/main.yaml": "entry: nope\ngrains: {}\n"},
    )
    found = problems(root)
    assert [p for p in found if p.startswith("triggers.")] == [
        "triggers.a.schedule: cron(0 0 * * 8): day-of-week '8': 8 is out of range 0-7",
        "triggers.b.missed: applies to schedule triggers only",
        "triggers.b.topic: 'sand.x' is reserved: topics starting with 'sand.' are SAND's own, "
        "with '__' Kafka's",
    ]
    assert any("workflows/main.yaml" in p for p in found)


def test_invalidVectors_areRefusedByLoadApp_too(make_app: AppFactory) -> None:
    """What next_firings refuses, an app.yaml refuses, naming the schedule or timezone."""
    for i, case in enumerate(VECTORS["invalid"]):
        zone = "" if case["timezone"] == "UTC" else f"    timezone: {case['timezone']}\n"
        root = app_with(
            make_app, f"  t:\n    schedule: {json.dumps(case['schedule'])}\n{zone}", name=f"v{i}"
        )
        found = problems(root)
        assert len(found) == 1 and found[0].startswith(
            ("triggers.t.schedule:", "triggers.t.timezone:")
        ), (
            case,
            found,
        )


# -- the description ------------------------------------------------------------------------------


def test_description_isTheContractsList(make_app: AppFactory) -> None:
    """Sorted by name, every default filled in, exactly the contract's keys."""
    root = app_with(
        make_app,
        "  tick: {schedule: rate(5 minutes)}\n"
        "  orders: {topic: shop.orders}\n"
        '  nightly:\n    schedule: "cron(0 3 * * 1-5)"\n    timezone: Europe/Paris\n'
        "    input: {report: daily}\n",
    )
    assert to_description(load_app(root).triggers) == [
        {
            "name": "nightly",
            "kind": "schedule",
            "schedule": "cron(0 3 * * 1-5)",
            "timezone": "Europe/Paris",
            "workflow": "main",
            "input": {"report": "daily"},
            "missed": "run_once",
        },
        {"name": "orders", "kind": "topic", "topic": "shop.orders", "workflow": "main"},
        {
            "name": "tick",
            "kind": "schedule",
            "schedule": "rate(5 minutes)",
            "timezone": "UTC",
            "workflow": "main",
            "input": {},
            "missed": "run_once",
        },
    ]
    assert to_description(()) == []


# -- the schema agrees with the loader ------------------------------------------------------------


@pytest.mark.parametrize(
    ("triggers", "valid"),
    [
        ("  t: {schedule: rate(5 minutes)}\n", True),
        ("  t: {schedule: 'cron(0 3 * * MON-FRI)', timezone: Europe/Paris, missed: skip}\n", True),
        ("  t: {topic: shop.orders, workflow: b}\n", True),
        ("  t: {schedule: rate(5 minutes), timezone: UTC}\n", False),
        ("  t: {schedule: 'cron(0 12 * * ? *)'}\n", False),
        ("  t: {schedule: 'cron(@daily)'}\n", False),
        ("  t: {schedule: rate(0 minutes)}\n", False),
        ("  t: {topic: shop.orders, missed: skip}\n", False),
        ("  t: {topic: sand.results}\n", False),
        ("  t: {topic: __x}\n", False),
        ("  t: {schedule: rate(1 day), topic: shop.orders}\n", False),
        ("  t: {schedule: rate(1 day), missed: never}\n", False),
        ("  -t: {topic: shop.orders}\n", False),
    ],
)
def test_appSchema_agreesWithLoadApp_onTriggers(
    make_app: AppFactory, triggers: str, valid: bool
) -> None:
    root = app_with(make_app, triggers)
    try:
        load_app(root)
        loaded = True
    except AppError:
        loaded = False
    assert loaded is valid
    manifest = yaml.safe_load((root / "app.yaml").read_text())
    validator = jsonschema.Draft202012Validator(load_schema("app"))
    assert (list(validator.iter_errors(manifest)) == []) is valid


def test_appSchema_triggerNamePattern_isTheLoaders() -> None:
    props = load_schema("app")["properties"]["triggers"]
    assert props["propertyNames"]["pattern"] == f"^{TRIGGER_NAME.pattern}$"
    assert props["maxProperties"] == MAX_TRIGGERS


# -- what started an execution, in its history --------------------------------------------------


def recorded(*types: str, trigger: dict[str, Any] | None) -> list[dict[str, Any]]:
    recorder = history.Recorder(clock_ms=lambda: 1)
    with history.recording(recorder):
        for kind in types:
            history.emit_execution(kind, "e1")
        history.amend_start(app="shop", name=None, started_ms=1, trigger=trigger)
    return recorder.events


def test_amendStart_putsTheTriggerOnExecutionStarted() -> None:
    trigger = {"name": "nightly", "kind": "schedule", "time": "2026-11-27T02:00:00Z"}
    started = recorded("ExecutionStarted", trigger=trigger)[0]
    assert started["trigger"] == trigger and started["app"] == "shop"


def test_amendStart_noTrigger_addsNoKey_andARedriveNeverGetsOne() -> None:
    """None adds no ``trigger``; an ExecutionRedriven gets the other facts, not the trigger."""
    assert "trigger" not in recorded("ExecutionStarted", trigger=None)[0]
    redriven = recorded("ExecutionRedriven", trigger={"name": "t", "kind": "topic"})[0]
    assert "trigger" not in redriven and redriven["app"] == "shop"
