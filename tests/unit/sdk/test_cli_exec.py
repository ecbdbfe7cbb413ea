"""`sand executions`, `sand execution show`, `sand stop` and `sand redrive` against the twin:
tables and timelines with the server's text unmangled (markup escaped), --json for machines,
exit 2 with the server's message for a refusal or for a usage error (as every command)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sand.cli import cli
from sand.cli.exec_cmds import parse_since

from tests.unit.sdk.conftest import Seeded

pytestmark = [pytest.mark.usefixtures("isolated"), pytest.mark.timeout(30)]


def run(seeded: Seeded, *args: str, user: str = "ada") -> Result:
    env = {"SAND_TOKEN": seeded.sand.store.issue(user), "SAND_URL": seeded.sand.gateway_url}
    return CliRunner(mix_stderr=False).invoke(cli, list(args), env=env)


def test_executions_tableListsTheCallersExecutions_newestFirst(seeded: Seeded) -> None:
    """Ids, apps, statuses and errors, in order; the admin's execution is not ada's."""
    result = run(seeded, "executions")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    for column in ("id", "app", "workflow", "status", "started", "duration", "error"):
        assert column in out
    positions = [out.index(i) for i in (seeded.succeeded, seeded.running, seeded.failed)]
    assert positions == sorted(positions)
    assert seeded.admins not in out
    # the cause's brackets come through as sent, not eaten as markup
    assert "ValueError: no address [a-z]+ for order 7" in out
    assert "515 ms" in out and "2026-01-01 00:00:00.000Z" in out


def test_executions_filters_andJson(seeded: Seeded) -> None:
    """--app/--status/--limit reach the server; --json prints the summaries, unwrapped."""
    result = run(seeded, "executions", "--app", "shop", "--status", "failed", "--json")
    assert result.exit_code == 0, result.stderr
    listed = json.loads(result.stdout)["executions"]
    assert [e["execution_id"] for e in listed] == [seeded.failed]
    assert listed[0]["cause"] == "no address [a-z]+ for order 7"
    assert "status=FAILED" in seeded.sand.store.requests[-1].path
    limited = json.loads(run(seeded, "executions", "--limit", "2", "--json").stdout)
    assert len(limited["executions"]) == 2


def test_executions_since_acceptsAnAge(seeded: Seeded) -> None:
    """--since 15m becomes epoch ms 15 minutes ago; a bad value is a usage error naming it."""
    assert parse_since("15m", now_s=1000.0) == 100_000
    assert parse_since("1767225600000") == 1_767_225_600_000
    assert parse_since("2026-01-01T00:00:00Z") == "2026-01-01T00:00:00Z"
    bad = run(seeded, "executions", "--since", "yesterday")
    assert bad.exit_code == 2
    assert "--since" in bad.stderr and "'yesterday'" in bad.stderr


def test_executions_badStatus_isAUsageError(seeded: Seeded) -> None:
    result = run(seeded, "executions", "--status", "DONE")
    assert result.exit_code == 2 and "DONE" in result.stderr


def test_executionShow_headerAndTimeline_highlightTheFailedState(seeded: Seeded) -> None:
    """The header has status, input, error and cause and names the failed state; the timeline
    has each event with offset, state (with its branch path), grain, host, pid and duration."""
    result = run(seeded, "execution", "show", seeded.failed)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert f"execution {seeded.failed}  FAILED" in out
    assert '{"order": 7}' in out
    assert "no address [a-z]+ for order 7" in out
    assert "failed in Fan[1]/Ship" in out
    ship = next(line for line in out.splitlines() if "TaskFailed" in line)
    for part in ("+0.513 s", "Fan[1]/Ship", "ValueError: no address [a-z]+ for order 7"):
        assert part in ship, (part, ship)
    for part in ("grain ship", "host host-1", "pid 4243", "ms 500"):
        assert part in ship, (part, ship)
    charge = next(line for line in out.splitlines() if "TaskStarted" in line)
    assert "grain charge  host host-1  pid 4242" in charge
    assert out.index("ExecutionStarted") < out.index("TaskFailed") < out.index("ExecutionFailed")


def test_executionShow_json_isTheDocumentAndEveryEvent(seeded: Seeded) -> None:
    """--json: the document and all events, across history pages."""
    result = run(seeded, "execution", "show", seeded.failed, "--json")
    assert result.exit_code == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["execution"]["status"] == "FAILED"
    assert shown["execution"]["input"] == {"order": 7}
    assert len(shown["events"]) == 11
    assert shown["events"][8]["type"] == "TaskFailed"
    assert shown["events"][8]["pid"] == 4243
    assert shown["truncated"] is False


def test_executionShow_saysWhenTheHistoryWasCut(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A history the server cut at its cap (``truncated``) is said to be incomplete."""
    store = seeded.sand.store.executions
    original = store._history

    def cut(doc: dict[str, Any], query: dict[str, str]) -> Any:
        reply = original(doc, query)
        return type(reply)(reply.status, {**reply.doc, "truncated": True}, reply.headers)

    monkeypatch.setattr(store, "_history", cut)
    result = run(seeded, "execution", "show", seeded.failed)
    assert result.exit_code == 0, result.stderr
    assert "the history was cut at its cap" in result.stdout
    assert json.loads(run(seeded, "execution", "show", seeded.failed, "--json").stdout)["truncated"]


def test_executionShow_unknownId_exits2_namingIt(seeded: Seeded) -> None:
    result = run(seeded, "execution", "show", "nope")
    assert result.exit_code == 2
    assert "no execution 'nope' is recorded" in result.stderr
    assert "Traceback" not in result.stderr


def test_executionShow_ofAnotherUsersExecution_isNotFound(seeded: Seeded) -> None:
    result = run(seeded, "execution", "show", seeded.admins)
    assert result.exit_code == 2
    assert f"no execution '{seeded.admins}' is recorded" in result.stderr


def test_executionShow_withoutHistory_saysSo(seeded: Seeded) -> None:
    result = run(seeded, "execution", "show", seeded.succeeded)
    assert result.exit_code == 0, result.stderr
    assert '{"ok": true}' in result.stdout
    assert "no history was recorded" in result.stdout


def test_stop_abortsARunningExecution(seeded: Seeded) -> None:
    """`sand stop ID --cause` sends the cause and shows the ABORTED status."""
    result = run(seeded, "stop", seeded.running, "--cause", "wrong [input]")
    assert result.exit_code == 0, result.stderr
    assert f"stopped {seeded.running}: ABORTED (States.Aborted: wrong [input])" in result.stderr
    assert seeded.sand.store.requests[-1].body == {"cause": "wrong [input]"}


def test_stop_ofAFinishedExecution_exits2_withTheConflict(seeded: Seeded) -> None:
    result = run(seeded, "stop", seeded.succeeded)
    assert result.exit_code == 2
    assert "HTTP 409" in result.stderr
    assert f"execution '{seeded.succeeded}' has already finished: it is SUCCEEDED" in (
        result.stderr
    )


def test_redrive_ofAFailedExecution_isRunningAgain(seeded: Seeded) -> None:
    result = run(seeded, "redrive", seeded.failed)
    assert result.exit_code == 0, result.stderr
    assert f"redriven {seeded.failed}: RUNNING, redrive 1" in result.stderr
    assert f"sand execution show {seeded.failed}" in result.stderr


def test_redrive_ofASucceededExecution_exits2_sayingWhy(seeded: Seeded) -> None:
    result = run(seeded, "redrive", seeded.succeeded)
    assert result.exit_code == 2
    assert "only a FAILED or ABORTED execution can be redriven" in result.stderr


def test_redrive_unknownId_exits2_namingIt(seeded: Seeded) -> None:
    result = run(seeded, "redrive", "gone-1")
    assert result.exit_code == 2
    assert "no execution 'gone-1' is recorded" in result.stderr


def test_missingArgument_isAUsageError(seeded: Seeded) -> None:
    assert run(seeded, "stop").exit_code == 2
    assert run(seeded, "execution", "show").exit_code == 2


def test_failedState_isTheTaskThatFailedTheLatestRun_notASiblingThatFailedLater() -> None:
    """Issue 24 (seen in the walk-through): a Map whose item 1 failed it while item 2 failed
    a moment later was said to have "failed in PriceItems[2]/Price", and a redriven execution
    that then succeeded still showed the old failure."""
    from sand.cli.exec_cmds import failed_state
    from sand.client.models import HistoryEvent

    def event(kind: str, path: str, **fields: object) -> HistoryEvent:
        return HistoryEvent.from_json(
            {"type": kind, "at_ms": 1, "execution_id": "x", "state": "Price", "path": path} | fields
        )

    first_run = [
        event("TaskFailed", "PriceItems[1]", error="KeyError", cause="'kiwi'"),
        event("StateFailed", "PriceItems[1]", error="KeyError", cause="'kiwi'"),
        event("TaskFailed", "PriceItems[2]", error="KeyError", cause="'plum'"),
    ]
    assert failed_state(first_run, "KeyError", "'kiwi'") == "PriceItems[1]/Price"
    redriven = [
        *first_run,
        HistoryEvent.from_json({"type": "ExecutionRedriven", "at_ms": 2, "execution_id": "x"}),
        event("TaskFailed", "PriceItems[2]", error="KeyError", cause="'plum'"),
    ]
    assert failed_state(redriven, "KeyError", "'plum'") == "PriceItems[2]/Price"
    assert failed_state(redriven[:4]) is None  # the redrive has not failed (yet)
