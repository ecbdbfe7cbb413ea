"""`sand login`, `logout`, `whoami`, `users` and `tokens` against a fake gateway: tokens come
from stdin and are printed once, refusals exit 2 with a message and no traceback."""

from __future__ import annotations

import json
import stat

import pytest
from click.testing import CliRunner, Result
from sand.cli import cli
from sand.credentials import credentials_path, read_credentials

from tests.unit.fake_sand import FakeSand

pytestmark = pytest.mark.usefixtures("isolated")


def run(*args: str, stdin: str | None = None) -> Result:
    return CliRunner(mix_stderr=False).invoke(cli, list(args), input=stdin)


@pytest.mark.timeout(30)
def test_login_fromStdin_checksAndSavesTheToken_mode0600(sand: FakeSand) -> None:
    """`sand login < FILE` asks whoami, saves {url: {token, user}} (0600), says who."""
    token = sand.store.issue("ada")
    result = run("login", "--url", sand.gateway_url, stdin=token + "\n")
    assert result.exit_code == 0, result.stderr
    assert f"signed in as ada (user) at {sand.gateway_url}" in result.stderr
    assert sand.store.requests[-1].path == "/v1/whoami"
    path = credentials_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {sand.gateway_url: {"token": token, "user": "ada"}}
    assert token not in result.stdout + result.stderr
    # later commands use it without being told
    whoami = run("whoami", "--url", sand.gateway_url)
    assert whoami.exit_code == 0, whoami.stderr
    assert whoami.stdout.strip() == f"ada (user) at {sand.gateway_url}"


@pytest.mark.timeout(30)
def test_login_refusedToken_exit2_savesNothing(sand: FakeSand) -> None:
    """A token the server does not know: exit 2, the reason, no credentials file."""
    result = run("login", "--url", sand.gateway_url, stdin="sand_" + "Q" * 43)
    assert result.exit_code == 2
    assert "refused (unknown, revoked or expired)" in result.stderr
    assert "Traceback" not in result.stderr
    assert not credentials_path().exists()


def test_login_notAToken_exit2_withoutEchoingIt() -> None:
    """Something that is not a SAND token is refused before any call, and not printed."""
    secret = "hunter2-my-password"
    result = run("login", "--url", "http://127.0.0.1:1", stdin=secret)
    assert result.exit_code == 2
    assert "not a SAND token" in result.stderr
    assert secret not in result.stdout + result.stderr
    empty = run("login", "--url", "http://127.0.0.1:1", stdin="")
    assert empty.exit_code == 2 and "no token on stdin" in empty.stderr


def test_login_hasNoTokenArgument() -> None:
    """A token never goes on the command line (shell history, ps)."""
    result = run("login", "--url", "http://127.0.0.1:1", "sand_" + "A" * 43)
    assert result.exit_code == 2
    assert "unexpected extra argument" in result.stderr.lower()


@pytest.mark.timeout(30)
def test_logout_forgetsTheUrl(sand: FakeSand) -> None:
    token = sand.store.issue("ada")
    assert run("login", "--url", sand.gateway_url, stdin=token).exit_code == 0
    result = run("logout", "--url", sand.gateway_url)
    assert result.exit_code == 0
    assert "signed out" in result.stderr
    assert read_credentials(credentials_path()) == {}
    again = run("logout", "--url", sand.gateway_url)
    assert again.exit_code == 0 and "not signed in" in again.stderr


@pytest.mark.timeout(30)
def test_whoami_notSignedIn_exit2_saysHowToSignIn(sand: FakeSand) -> None:
    result = run("whoami", "--url", sand.gateway_url)
    assert result.exit_code == 2
    assert "not signed in" in result.stderr and "sand login" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.timeout(30)
def test_existingCommands_sendTheResolvedToken(
    sand: FakeSand, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sand apps` (and every app command) carries the token from $SAND_TOKEN."""
    token = sand.store.issue("ada")
    monkeypatch.setenv("SAND_TOKEN", token)
    result = run("apps", "--url", sand.gateway_url, "--json")
    assert result.exit_code == 0, result.stderr
    assert sand.store.requests[-1].headers["Authorization"] == f"Bearer {token}"


@pytest.mark.timeout(30)
def test_tokensCreate_printsTheTokenOnce_aloneOnStdout(
    sand: FakeSand, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new token is stdout's only line, appears nowhere else, with a note that it is
    shown once; it then works."""
    monkeypatch.setenv("SAND_TOKEN", sand.store.issue("admin"))
    result = run("tokens", "create", "--user", "ada", "--label", "ci", "--url", sand.gateway_url)
    assert result.exit_code == 0, result.stderr
    token = result.stdout.strip()
    assert result.stdout == token + "\n"
    assert sand.store.tokens[token][1:] == ("ada", "ci")
    assert "shown once" in result.stderr and token not in result.stderr
    listed = run("tokens", "--user", "ada", "--json", "--url", sand.gateway_url)
    assert listed.exit_code == 0, listed.stderr
    assert token not in listed.stdout
    assert [t["label"] for t in json.loads(listed.stdout)] == ["ci"]


@pytest.mark.timeout(30)
def test_tokensCreate_json_andExpiryMustBePositive(
    sand: FakeSand, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAND_TOKEN", sand.store.issue("ada"))
    result = run("tokens", "create", "--json", "--url", sand.gateway_url)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["user"] == "ada" and doc["token"] in sand.store.tokens
    bad = run("tokens", "create", "--expires-in-days", "0", "--url", sand.gateway_url)
    assert bad.exit_code == 2 and "--expires-in-days" in bad.stderr


@pytest.mark.timeout(30)
def test_tokensRevoke_endsTheToken(sand: FakeSand, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAND_TOKEN", sand.store.issue("admin"))
    victim = sand.store.issue("ada")
    token_id = sand.store.tokens[victim][0]
    result = run("tokens", "revoke", token_id, "--url", sand.gateway_url)
    assert result.exit_code == 0, result.stderr
    assert victim not in sand.store.tokens
    missing = run("tokens", "revoke", token_id, "--url", sand.gateway_url)
    assert missing.exit_code == 2 and "no token" in missing.stderr


@pytest.mark.timeout(30)
def test_users_createListDelete_asAdmin(sand: FakeSand, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAND_TOKEN", sand.store.issue("admin"))
    created = run("users", "create", "grace", "--admin", "--url", sand.gateway_url)
    assert created.exit_code == 0, created.stderr
    assert sand.store.users["grace"] == "admin"
    listed = run("users", "--json", "--url", sand.gateway_url)
    assert {u["name"]: u["role"] for u in json.loads(listed.stdout)} == {
        "admin": "admin",
        "ada": "user",
        "grace": "admin",
    }
    table = run("users", "--url", sand.gateway_url)
    assert table.exit_code == 0 and "grace" in table.stdout
    exists = run("users", "create", "grace", "--url", sand.gateway_url)
    assert exists.exit_code == 2 and "exists" in exists.stderr
    sand.store.issue("grace")
    deleted = run("users", "--url", sand.gateway_url, "delete", "grace")  # the group's --url
    assert deleted.exit_code == 0, deleted.stderr
    assert "revoked 1 token" in deleted.stderr and "grace" not in sand.store.users


@pytest.mark.timeout(30)
def test_users_asNonAdmin_exit2_saysAnAdminIsNeeded(
    sand: FakeSand, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAND_TOKEN", sand.store.issue("ada"))
    result = run("users", "--url", sand.gateway_url)
    assert result.exit_code == 2
    assert "not allowed" in result.stderr and "admin" in result.stderr
