"""`sand task success|failure|heartbeat` against the twin: the output read from --output,
--output-file or stdin, the answer as one line (or JSON), and every refusal as one line
on stderr with exit 2 and no traceback: a 409 with its message, a 429 as busy, an
--output that is not JSON as a usage error naming the option, before anything is sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sand.cli import cli

from tests.unit.fake_sand import FakeSand

pytestmark = [pytest.mark.usefixtures("isolated"), pytest.mark.timeout(30)]

TOKEN = "c2hvcApleGVjLTEKZXhlYy0xL0FwcHJvdmUjMQ.c2lnbmF0dXJl"


@pytest.fixture
def shop(sand: FakeSand) -> FakeSand:
    """The twin with ada's app ``shop`` and a task of it waiting on ``TOKEN``."""
    sand.store.executions.add_app("shop", "ada")
    sand.store.tasks.add(TOKEN, "shop")
    return sand


def run(sand: FakeSand, *args: str, stdin: str | None = None) -> Result:
    env = {"SAND_TOKEN": sand.store.issue("ada"), "SAND_URL": sand.gateway_url}
    return CliRunner(mix_stderr=False).invoke(cli, ["task", *args], env=env, input=stdin)


def sent(sand: FakeSand) -> object:
    """The body of the last callback the twin received."""
    return [r for r in sand.store.requests if r.path.startswith("/v1/tasks/")][-1].body


def test_success_sendsTheOutput_andSaysWhatTheTaskIsNow(shop: FakeSand) -> None:
    """--output JSON is the task's result; one line on stderr, nothing on stdout."""
    result = run(shop, "success", TOKEN, "--output", '{"approved": true}')
    assert result.exit_code == 0, result.stderr
    assert result.stderr.strip() == "success sent: the task is SUCCEEDED"
    assert result.stdout == ""
    assert sent(shop) == {"output": {"approved": True}}


@pytest.mark.parametrize("how", ["--output-file", "--output-file -", "--output -"])
def test_success_readsTheOutput_fromAFileOrStdin(shop: FakeSand, tmp_path: Path, how: str) -> None:
    """--output-file PATH reads the file; '-' (for either option) reads stdin."""
    path = tmp_path / "out.json"
    path.write_text('[1, "two"]')
    args = how.split() if " " in how else [how, str(path)]
    result = run(shop, "success", TOKEN, *args, stdin='[1, "two"]')
    assert result.exit_code == 0, result.stderr
    assert sent(shop) == {"output": [1, "two"]}


def test_success_withoutAnOutput_sendsAnEmptyObject(shop: FakeSand) -> None:
    result = run(shop, "success", TOKEN)
    assert result.exit_code == 0, result.stderr
    assert sent(shop) == {"output": {}}


def test_success_withOutputThatIsNotJson_isAUsageErrorNamingTheOption(shop: FakeSand) -> None:
    """Nothing is sent; the message names --output and where the JSON breaks."""
    result = run(shop, "success", TOKEN, "--output", "{approved: yes}")
    assert result.exit_code == 2
    assert "Invalid value for --output: the value is not valid JSON" in result.stderr
    assert "line 1 column 2" in result.stderr
    assert not [r for r in shop.store.requests if r.path.startswith("/v1/tasks/")]
    both = run(shop, "success", TOKEN, "--output", "{}", "--output-file", "-")
    assert both.exit_code == 2
    assert "give the output with --output or --output-file, not both" in both.stderr


def test_failure_sendsErrorAndCause_andJsonPrintsTheStatus(shop: FakeSand) -> None:
    """--error and --cause reach the body; --json prints {"status"} on stdout."""
    result = run(shop, "failure", TOKEN, "--error", "Rejected", "--cause", "no [budget]", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"status": "FAILED"}
    assert sent(shop) == {"error": "Rejected", "cause": "no [budget]"}


def test_heartbeat_saysTheTaskStillWaits(shop: FakeSand) -> None:
    result = run(shop, "heartbeat", TOKEN)
    assert result.exit_code == 0, result.stderr
    assert result.stderr.strip() == "heartbeat sent: the task is WAITING"
    assert shop.store.tasks.waits[TOKEN].beats == 1


def test_aTaskNoLongerWaiting_exits2_withTheServersMessage(shop: FakeSand) -> None:
    """A 409 is one line naming the status (its brackets kept), no traceback; --json: a
    JSON error with the status."""
    assert run(shop, "success", TOKEN).exit_code == 0
    result = run(shop, "failure", TOKEN, "--error", "Late")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: HTTP 409: the task is no longer waiting: already SUCCEEDED"
    )
    assert "Traceback" not in result.stderr
    as_json = run(shop, "heartbeat", TOKEN, "--json")
    assert as_json.exit_code == 2 and as_json.stdout == ""
    error = json.loads(as_json.stderr)["error"]
    assert error["status"] == 409 and "already SUCCEEDED" in error["message"]


def test_aBusyGateway_saysBusyRetryInNSeconds(shop: FakeSand) -> None:
    shop.store.tasks.busy_retry_s = 3
    result = run(shop, "heartbeat", TOKEN)
    assert result.exit_code == 2
    assert result.stderr.strip() == "busy: the cluster is busy; retry in 3 s"


def test_aMalformedToken_exits2_withTheServersMessage(shop: FakeSand) -> None:
    result = run(shop, "success", "nope")
    assert result.exit_code == 2
    assert "HTTP 400: 'token': not a task token of this cluster" in result.stderr
    empty = run(shop, "heartbeat", " ")
    assert empty.exit_code == 2 and "TOKEN" in empty.stderr and "is empty" in empty.stderr


@pytest.mark.parametrize("command", ["success", "failure", "heartbeat"])
def test_help_saysWhatATaskTokenIs(command: str) -> None:
    """Each command's help says where a token comes from."""
    result = CliRunner().invoke(cli, ["task", command, "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "$$.Task.Token" in text and ".waitForTaskToken" in text


def test_executionShow_ofAWaitingTask_printsItsTokenWhole(shop: FakeSand) -> None:
    """`sand execution show` gives the token a `sand task` command needs, uncut; a timeout
    of the wait is a failure line."""
    waiting = shop.store.executions.add(
        {"app": "shop", "status": "RUNNING"},
        [
            {"type": "StateEntered", "at_ms": 1000, "state": "Approve"},
            {
                "type": "TaskSubmitted",
                "at_ms": 1010,
                "state": "Approve",
                "output": {"sent_to": "ops"},
                "task_token": TOKEN,
                "timeout_at": 90_000,
                "heartbeat_s": 60,
            },
            {
                "type": "TaskTimedOut",
                "at_ms": 90_000,
                "state": "Approve",
                "error": "States.Timeout",
                "cause": "no answer in 89 s",
            },
        ],
    )
    env = {"SAND_TOKEN": shop.store.issue("ada"), "SAND_URL": shop.gateway_url}
    result = CliRunner(mix_stderr=False).invoke(cli, ["execution", "show", waiting], env=env)
    assert result.exit_code == 0, result.stderr
    submitted = next(line for line in result.stdout.splitlines() if "TaskSubmitted" in line)
    for part in (
        f"token {TOKEN}",
        "times out at 1970-01-01T00:01:30+00:00",
        "heartbeat s 60",
        '{"sent_to":"ops"}',
    ):
        assert part in submitted, (part, submitted)
    assert "TaskTimedOut States.Timeout: no answer in 89 s" in result.stdout
