"""How the CLI prints: --json gives one JSON document on stdout (errors as JSON on stderr),
messages keep their brackets (no rich markup), nothing machine-readable is wrapped at a
narrow terminal, '-' reads stdin, a mistyped name gets a suggestion."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sand.cli import cli
from sand.cli.app_cmds import new_lines

from tests.unit.sdk.fake_apps import AppsStore, FakeApps, fake_apps

from .conftest import EXAMPLES, AppFactory

pytestmark = pytest.mark.usefixtures("isolated")

# a name longer than the narrow terminal below: wrapping would show in every output
LONG = "a-very-long-application-name-that-no-narrow-terminal-can-hold-x"
NARROW = {"COLUMNS": "20", "LINES": "10"}


def run(*args: str, stdin: str | bytes | None = None) -> Result:
    return CliRunner(mix_stderr=False, env=NARROW).invoke(cli, list(args), input=stdin)


@pytest.fixture
def server() -> Iterator[FakeApps]:
    store = AppsStore()
    store.add("hello", ("main", "other"))
    store.add(LONG)
    with fake_apps(store) as running:
        yield running


# -- markup and wrapping -------------------------------------------------------------------


def test_deploy_invalidApp_printsTheRuleWithItsBrackets(make_app: AppFactory) -> None:
    """The issue's case: `sand deploy` of an app with a bad name printed `must match +`; the
    rule is printed whole, on one line, even on a 20-column terminal."""
    root = make_app("name: Bad\ngrains: {a: a.py}\nworkflows: {main: wf.yaml}\n")
    result = run("deploy", str(root), "--url", "http://127.0.0.1:1")
    assert result.exit_code == 2
    assert "name: 'Bad' must match [a-z0-9][a-z0-9-]{0,62}" in result.stderr
    assert result.stdout == ""


def test_deploy_serverProblems_keepTheirBrackets(server: FakeApps) -> None:
    """Problems the server sends back are printed as sent, each on one line."""
    problem = "app.yaml: grains.[x]: name must match [A-Za-z0-9_-]+ [bold]really[/bold]"
    server.store.deploy_problems = [problem]
    result = run("deploy", str(EXAMPLES / "hello"), "--url", server.url)
    assert result.exit_code == 2
    assert f"  {problem}\n" in result.stderr


def test_table_cellsFromTheServer_areNotMarkup(server: FakeApps) -> None:
    """A value from the server with brackets is shown as it is in a table."""
    server.store.apps["hello"]["backend"] = "[red]docker[/red]"
    result = CliRunner(mix_stderr=False, env={"COLUMNS": "200"}).invoke(
        cli, ["app", "show", "hello", "--url", server.url]
    )
    assert result.exit_code == 0, result.stderr
    assert "[red]docker[/red]" in result.stdout


def test_json_longValues_areNotWrapped_onANarrowTerminal(server: FakeApps) -> None:
    """JSON is printed plainly: a value longer than the terminal stays on its line."""
    result = run("apps", "--json", "--url", server.url)
    assert result.exit_code == 0, result.stderr
    assert f'"name": "{LONG}"' in result.stdout
    assert [app["name"] for app in json.loads(result.stdout)] == ["hello", LONG]


# -- --json on every command that prints data -----------------------------------------------


def _json_commands(url: str) -> list[list[str]]:
    return [
        ["apps", "--json", "--url", url],
        ["app", "show", LONG, "--json", "--url", url],
        ["invoke", LONG, "--async", "--json", "--url", url],
        ["invoke", LONG, "--input", '{"k": [1, 2]}', "--json", "--url", url],
        ["logs", LONG, "--json", "--url", url],
        ["deploy", str(EXAMPLES / "hello"), "--json", "--url", url],
        ["validate", str(EXAMPLES / "fanout"), "--json"],
        ["validate", str(EXAMPLES / "hello/workflows/main.yaml"), "--json"],
        ["emulate", str(EXAMPLES / "hello"), "--input", '{"name": "x"}', "--json"],
        ["schema", "app"],
        ["undeploy", LONG, "--json", "--url", url],
    ]


@pytest.mark.timeout(60)
def test_json_everyCommand_printsExactlyOneJsonDocument(server: FakeApps) -> None:
    """Each command that prints data prints one JSON document on stdout under --json."""
    server.store.logs[LONG] = ["line [one]", "line two"]
    documents: dict[str, Any] = {}
    for args in _json_commands(server.url):
        result = run(*args)
        assert result.exit_code == 0, (args, result.stderr)
        documents[" ".join(args[:2])] = json.loads(result.stdout)  # one document, nothing else
    assert documents[f"invoke {LONG}"]["output"] == {"k": [1, 2]}
    assert documents[f"logs {LONG}"] == {"app": LONG, "lines": ["line [one]", "line two"]}
    assert documents[f"validate {EXAMPLES / 'fanout'}"] == {
        "ok": True,
        "problems": [],
        "warnings": [],
    }
    emulated = documents[f"emulate {EXAMPLES / 'hello'}"]
    assert (emulated["status"], emulated["workflow"]) == ("SUCCEEDED", "main")
    assert {"normalize", "greet", "shout"} <= {e.get("state") for e in emulated["history"]}
    assert documents[f"undeploy {LONG}"] == {"undeployed": LONG}


def test_json_refusal_isOneJsonDocumentOnStderr(server: FakeApps) -> None:
    """Under --json an error is {"error": {"message", "status"}} on stderr; stdout is empty."""
    result = run("app", "show", "nope", "--json", "--url", server.url)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert json.loads(result.stderr) == {
        "error": {"message": "no application 'nope'", "status": 404}
    }


def test_json_usageError_isJsonOnStderr(server: FakeApps) -> None:
    """A usage error under --json (bad input JSON) is JSON on stderr too, exit 2."""
    result = run("invoke", "hello", "--input", "{", "--json", "--url", server.url)
    assert result.exit_code == 2
    error = json.loads(result.stderr)["error"]
    assert "is not valid JSON" in error["message"] and error["usage"] is True


def test_json_validateProblems_areData_exit1(make_app: AppFactory) -> None:
    """validate --json lists the problems in its document and exits 1."""
    result = run("validate", str(make_app("name: x\n")), "--json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["ok"] is False
    assert any("grains: is required" in p for p in document["problems"])


# -- '-' reads stdin ---------------------------------------------------------------------


def test_invoke_inputDash_andInputFileDash_readStdin(server: FakeApps) -> None:
    """--input - and --input-file - read the input JSON from stdin."""
    for flag in ("--input", "--input-file"):
        result = run("invoke", "hello", flag, "-", "--url", server.url, stdin='{"from": "stdin"}')
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout) == {"from": "stdin"}


def test_invokeAsync_printsTheBareId_forAShellVariable_andJsonWithJson(server: FakeApps) -> None:
    """`ID=$(sand invoke APP --async)` takes the id as it is; how to follow it goes to stderr;
    --json keeps the document."""
    plain = run("invoke", "hello", "--async", "--url", server.url)
    assert plain.exit_code == 0, plain.stderr
    execution_id = plain.stdout.strip()
    assert execution_id and "{" not in plain.stdout and len(plain.stdout.splitlines()) == 1
    assert f"sand execution show {execution_id}" in plain.stderr
    as_json = run("invoke", "hello", "--async", "--json", "--url", server.url)
    assert as_json.exit_code == 0, as_json.stderr
    assert set(json.loads(as_json.stdout)) == {"execution_id"}


def test_deploy_dash_readsATarArchiveFromStdin(server: FakeApps) -> None:
    """`tar -C app -c . | sand deploy -`: the archive is unpacked, validated and deployed."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(EXAMPLES / "hello", arcname=".")
    result = run("deploy", "-", "--json", "--url", server.url, stdin=buffer.getvalue())
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["name"] == "deployed"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(EXAMPLES / "hello/app.yaml", arcname="app.yaml")
    invalid = run("deploy", "-", "--url", server.url, stdin=buffer.getvalue())
    assert invalid.exit_code == 2
    assert "stdin: the application is invalid" in invalid.stderr
    assert "  stdin/app.yaml: grains.normalize: file grains/normalize.py does not exist" in (
        invalid.stderr
    )
    garbage = run("deploy", "-", "--url", server.url, stdin=b"not a tar")
    assert garbage.exit_code == 2
    assert "stdin: not an application directory or tar archive" in garbage.stderr


def test_validate_dash_readsAWorkflowFromStdin() -> None:
    """validate - checks a workflow given on stdin, YAML or JSON."""
    assert run("validate", "-", stdin="entry: a\ngrains: {a: {}}\n").stdout == "ok\n"
    assert run("validate", "-", stdin='{"entry": "a", "grains": {"a": {}}}').stdout == "ok\n"
    bad = run("validate", "-", stdin="entry: a\ngrains:\n  a: {}\n  a: {}\n")
    assert bad.exit_code == 1
    assert "stdin.yaml:4:3: malformed YAML: duplicate key 'a' (first given on line 3)" in (
        bad.stderr
    )


# -- did you mean ------------------------------------------------------------------------


def test_unknownApp_suggestsTheClosestDeployed(server: FakeApps) -> None:
    """A 404 for an app that is not deployed names the closest deployed app."""
    for args in (["app", "show", "helo"], ["invoke", "helo"], ["logs", "hell"]):
        result = run(*args, "--url", server.url)
        assert result.exit_code == 2, args
        assert f"no application '{args[-1]}'; did you mean 'hello'?" in result.stderr


def test_unknownApp_farFromEveryName_noSuggestion(server: FakeApps) -> None:
    """No suggestion when nothing is close."""
    result = run("app", "show", "zzzzzz", "--url", server.url)
    assert result.exit_code == 2
    assert "no application 'zzzzzz'" in result.stderr and "did you mean" not in result.stderr


def test_invoke_unknownWorkflow_suggestsTheClosest(server: FakeApps) -> None:
    """invoke --workflow with a typo names the closest workflow of the app."""
    result = run("invoke", "hello", "--workflow", "mian", "--url", server.url)
    assert result.exit_code == 2
    assert "application 'hello' has no workflow 'mian'; did you mean 'main'?" in result.stderr


def test_emulate_unknownWorkflow_suggestsTheClosest() -> None:
    """emulate --workflow with a typo names the closest workflow of the app."""
    result = run("emulate", str(EXAMPLES / "hello"), "--workflow", "mian")
    assert result.exit_code == 2
    assert "no workflow called 'mian' (the app has: main); did you mean 'main'?" in result.stderr


# -- busy (429) ---------------------------------------------------------------------------


def test_invoke_busy_saysBusyAndWhenToRetry_exit2_noTraceback(server: FakeApps) -> None:
    """A 429 is shown as `busy: application 'X' ... retry in N s` on one line, exit 2, never a
    traceback; sync and async alike (decision 0023)."""
    server.store.busy["hello"] = 3
    for extra in ([], ["--async"]):
        result = run("invoke", "hello", "--input", "{}", *extra, "--url", server.url)
        assert result.exit_code == 2, result.stderr
        assert result.stderr.startswith("busy: application 'hello' is at its bound on host")
        assert result.stderr.rstrip().endswith("retry in 3 s")
        assert "Traceback" not in result.stderr and result.stdout == ""
    del server.store.busy["hello"]
    ok = run("invoke", "hello", "--input", "{}", "--url", server.url)
    assert ok.exit_code == 0, ok.stderr


def test_invoke_busyJson_theErrorDocumentCarriesRetryAfter(server: FakeApps) -> None:
    """Under --json a 429 is one JSON document on stderr with status and retry_after_s."""
    server.store.busy["hello"] = 2
    result = run("invoke", "hello", "--input", "{}", "--json", "--url", server.url)
    assert result.exit_code == 2
    assert result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["status"] == 429
    assert error["retry_after_s"] == 2
    assert "admission.max_queued_per_app" in error["message"]


# -- logs --follow -----------------------------------------------------------------------


def test_newLines_dropsTheOverlapOfTwoWindows() -> None:
    """The lines of a later window of the same log that the earlier one did not have."""
    assert new_lines(["a", "b", "c"], ["b", "c", "d", "e"]) == ["d", "e"]
    assert new_lines(["a", "b"], ["a", "b"]) == []
    assert new_lines([], ["a"]) == ["a"]
    assert new_lines(["x", "x"], ["x", "x", "x"]) == ["x"]
    assert new_lines(["a"], ["q", "r"]) == ["q", "r"]  # no overlap: all of it is new


@pytest.mark.timeout(30)
def test_logs_follow_printsEachNewLineOnce(
    server: FakeApps, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--follow prints the agent's notes and the tail, then each line as it appears, once
    (a note of the agent, which comes before the output in each answer, too); Ctrl-C ends
    it."""
    log = server.store.logs["hello"]
    log.extend(["[agent] deployed version 1", *(f"old {n}" for n in range(10)), "one", "two"])
    polls = iter([["three"], [], ["[agent] sandbox restarted", "four", "five"]])

    def sleep(seconds: float) -> None:
        try:
            log.extend(next(polls))
        except StopIteration:
            raise KeyboardInterrupt from None

    monkeypatch.setattr("sand.cli.app_cmds.time.sleep", sleep)
    result = run("logs", "hello", "--follow", "--tail", "2", "--url", server.url)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        "[agent] deployed version 1",
        "one",
        "two",
        "three",
        "[agent] sandbox restarted",
        "four",
        "five",
    ]


# -- completion --------------------------------------------------------------------------


def test_completion_bashSource_isClicksScript() -> None:
    """`_SAND_COMPLETE=bash_source sand` prints the bash completion script (README)."""
    result = CliRunner(env={"_SAND_COMPLETE": "bash_source"}).invoke(
        cli, [], prog_name="sand", standalone_mode=True
    )
    assert "_sand_completion" in result.output
    assert "complete -o nosort -F _sand_completion sand" in result.output


def test_root_help_listsEveryCommand() -> None:
    """The commands this change adds are registered."""
    out = run("--help").stdout
    for command in ("init", "schema", "app", "validate", "logs"):
        assert f"  {command} " in out, command


# -- invoke --trace ------------------------------------------------------------------------

TRACE = {
    "frontend_in": "1000.0",
    "spans": [
        {
            "grain": "second",
            "kind": "grain",
            "queued": 1000.010,
            "took": 1000.012,
            "start": 1000.013,
            "end": 1000.020,
            "pushed": 1000.021,
        },
        {
            "grain": "first",
            "kind": "entry",
            "queued": 1000.001,
            "took": 1000.002,
            "start": 1000.003,
            "end": 1000.008,
            "pushed": 1000.009,
        },
    ],
}


class _TracingClient:
    """Stands for the typed client (issue 13), whose invoke takes trace=True and whose
    Execution carries the answer's `trace`."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def invoke(
        self,
        app: str,
        payload: Any,
        *,
        workflow: str | None = None,
        wait: bool = True,
        via: str | None = None,
        trace: bool = False,
    ) -> Any:
        from types import SimpleNamespace

        options = {"workflow": workflow, "wait": wait, "via": via, "trace": trace}
        self.calls.append(options)
        return SimpleNamespace(
            execution_id="ex-9",
            status="SUCCEEDED",
            output={"ok": 1},
            error=None,
            cause=None,
            trace=TRACE if options.get("trace") else None,
        )


def test_invoke_trace_printsTheSpansOnStderr_outputStaysOnStdout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--trace asks for the trace and prints one row per span, in the order the events were
    queued, times in ms after the frontend's receipt; stdout is still the output line."""
    stub = _TracingClient()
    monkeypatch.setattr("sand.cli.app_cmds.client", lambda url: stub)
    result = CliRunner(mix_stderr=False, env={"COLUMNS": "200"}).invoke(
        cli, ["invoke", "hello", "--trace"]
    )
    assert result.exit_code == 0, result.stderr
    assert stub.calls[0]["trace"] is True
    assert json.loads(result.stdout) == {"ok": 1}
    lines = result.stderr.splitlines()
    first = next(line for line in lines if "first" in line)
    second = next(line for line in lines if "second" in line)
    assert lines.index(first) < lines.index(second)
    # queued 1.0, took 2.0, start 3.0, end 8.0, pushed 9.0; waited 1.0, ran 5.0 (ms)
    assert re.findall(r"\d+\.\d", first) == ["1.0", "2.0", "3.0", "8.0", "9.0", "1.0", "5.0"]
    assert re.findall(r"\d+\.\d", second)[-2:] == ["2.0", "7.0"]


def test_invoke_traceJson_putsTheTraceInTheDocument(monkeypatch: pytest.MonkeyPatch) -> None:
    """--trace --json: the trace is a field of the one JSON document; no table."""
    monkeypatch.setattr("sand.cli.app_cmds.client", lambda url: _TracingClient())
    result = run("invoke", "hello", "--trace", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["trace"] == TRACE
    assert "first" not in result.stderr


class _FailingClient:
    """Answers every invocation with a FAILED execution (and records its input)."""

    def __init__(self) -> None:
        self.payloads: list[Any] = []

    def invoke(self, app: str, payload: Any, **options: Any) -> Any:
        from types import SimpleNamespace

        self.payloads.append(payload)
        return SimpleNamespace(
            execution_id="0f" * 16,
            status="FAILED",
            output=None,
            error="ValueError",
            cause="the input needs a non-empty 'name'",
            trace=None,
        )


def test_invoke_failed_saysTheIdAndHowToSeeWhy_onStderr(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24: a failed invoke printed {"Error", "Cause"} and nothing to go on. stdout stays
    that one line (exit 1); stderr names the execution and the command that shows its
    history; --json keeps stderr quiet. Without --input the input is {} (as --help says)."""
    stub = _FailingClient()
    monkeypatch.setattr("sand.cli.app_cmds.client", lambda url: stub)
    result = run("invoke", "hello")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {
        "Error": "ValueError",
        "Cause": "the input needs a non-empty 'name'",
    }
    execution_id = "0f" * 16
    assert f"execution {execution_id} failed" in result.stderr
    assert f"sand execution show {execution_id}" in result.stderr
    assert stub.payloads == [{}]
    quiet = run("invoke", "hello", "--json")
    assert quiet.exit_code == 1 and quiet.stderr == ""
    assert json.loads(quiet.stdout)["execution_id"] == execution_id
    assert "Without --input or --input-file: {}" in " ".join(run("invoke", "--help").stdout.split())


def test_deploy_withoutJson_printsOneLineNotTheDocument(server: FakeApps) -> None:
    """Issue 24: `sand deploy` printed the app's whole JSON document (~50 lines) on stdout.
    Without --json it says in one line what was deployed; stdout stays empty."""
    result = run("deploy", str(EXAMPLES / "hello"), "--url", server.url)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    summary = [line for line in result.stderr.splitlines() if line.startswith("deployed ")]
    assert len(summary) == 1, result.stderr
    assert "grains " in summary[0] and "workflows " in summary[0]
    assert "sand app show " in summary[0]


def test_completion_appArgument_completesDeployedNames(server: FakeApps) -> None:
    """TAB after `sand logs he` offers the deployed apps starting with 'he'."""
    env = {
        "_SAND_COMPLETE": "bash_complete",
        "COMP_WORDS": "sand logs he",
        "COMP_CWORD": "2",
        "SAND_URL": server.url,
    }
    result = CliRunner(env=env).invoke(cli, [], prog_name="sand")
    assert result.output.splitlines() == ["plain,hello"]


def test_completion_appArgument_gatewayDown_offersNothing() -> None:
    """No gateway: no names and no traceback in the shell."""
    env = {
        "_SAND_COMPLETE": "bash_complete",
        "COMP_WORDS": "sand logs he",
        "COMP_CWORD": "2",
        "SAND_URL": "http://127.0.0.1:1",
    }
    result = CliRunner(env=env).invoke(cli, [], prog_name="sand")
    assert result.output.strip() == ""
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_down_json_nothingRunning_saysSoInJson() -> None:
    """`sand down --json` in a state dir with nothing running: {"stopped": []}."""
    result = run("down", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"stopped": []}
    assert result.stderr == ""


def test_config_dash_readsTomlFromStdin() -> None:
    """`sand config --config -` layers the TOML given on stdin; a bad one names stdin's file."""
    result = run("config", "--config", "-", stdin="[cluster]\nhosts = 3\n")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["host_count"] == 3
    bad = run("config", "--config", "-", stdin="[cluster\n")
    assert bad.exit_code == 1
    assert "stdin.toml" in bad.stderr


def test_deploy_invalidApp_json_errorNamesEveryProblem(make_app: AppFactory) -> None:
    """deploy --json of an invalid app: one JSON error on stderr carrying every problem."""
    root = make_app("name: Bad\ngrains: {a: a.py}\nworkflows: {main: wf.yaml}\n")
    result = run("deploy", str(root), "--json", "--url", "http://127.0.0.1:1")
    assert result.exit_code == 2 and result.stdout == ""
    message = json.loads(result.stderr)["error"]["message"]
    assert "name: 'Bad' must match [a-z0-9][a-z0-9-]{0,62}" in message
    assert "grains.a: file a.py does not exist" in message


@pytest.mark.timeout(60)
def test_realProcess_narrowTerminal_jsonAndMessagesAreWhole(make_app: AppFactory) -> None:
    """As a program with COLUMNS=20: the JSON on stdout parses and the long problem line
    on stderr is whole (rich neither wraps nor eats brackets outside CliRunner either)."""
    root = make_app("name: Bad_Name\ngrains: {a: a.py}\nworkflows: {main: wf.yaml}\n")
    sand = str(Path(sys.executable).parent / "sand")
    env = {**os.environ, "COLUMNS": "20", "TERM": "xterm-256color"}
    done = subprocess.run(
        [sand, "validate", str(root), "--json"], capture_output=True, text=True, env=env, timeout=30
    )
    assert done.returncode == 1
    assert any(
        "name: 'Bad_Name' must match [a-z0-9][a-z0-9-]{0,62}" in p
        for p in json.loads(done.stdout)["problems"]
    )
    plain = subprocess.run(
        [sand, "validate", str(root)], capture_output=True, text=True, env=env, timeout=30
    )
    assert f"{root}/app.yaml: name: 'Bad_Name' must match [a-z0-9][a-z0-9-]{{0,62}}\n" in (
        plain.stderr
    )
