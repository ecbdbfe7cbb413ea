"""Where a client's token comes from: $SAND_TOKEN, then the credentials file (by URL), then
this machine's cluster's admin token; and how the credentials file is written."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from sand.credentials import (
    Credential,
    CredentialsError,
    canonical_url,
    credentials_path,
    looks_like_token,
    read_credentials,
    remove_credential,
    resolve_token,
    save_credential,
    write_private_file,
)

URL = "http://127.0.0.1:18080"
TOKEN_A = "sand_" + "A" * 43
TOKEN_B = "sand_" + "b" * 43
TOKEN_ADMIN = "sand_" + "-" * 43


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment of its own: config home and state dir in tmp_path, no $SAND_TOKEN."""
    return {"XDG_CONFIG_HOME": str(tmp_path / "config"), "SAND_STATE_DIR": str(tmp_path / "st")}


def _admin_token_file(env: dict[str, str], token: str = TOKEN_ADMIN) -> Path:
    path = Path(env["SAND_STATE_DIR"]) / "conf" / "admin.token"
    path.parent.mkdir(parents=True)
    path.write_text(token + "\n")
    return path


def test_credentialsPath_followsXdgConfigHome_elseHomeConfig(tmp_path: Path) -> None:
    """${XDG_CONFIG_HOME:-~/.config}/sand/credentials.json."""
    assert credentials_path({"XDG_CONFIG_HOME": "/x"}) == Path("/x/sand/credentials.json")
    assert credentials_path({"HOME": "/home/ada"}) == Path(
        "/home/ada/.config/sand/credentials.json"
    )


def test_resolve_sandTokenWins_overFileAndAdminToken(env: dict[str, str]) -> None:
    """$SAND_TOKEN comes first, even with a saved sign-in and a local admin token."""
    save_credential(URL, Credential(TOKEN_B, "ada"), credentials_path(env))
    _admin_token_file(env)
    resolved = resolve_token(URL, {**env, "SAND_TOKEN": f" {TOKEN_A}\n"})
    assert resolved is not None
    assert (resolved.token, resolved.source) == (TOKEN_A, "$SAND_TOKEN")


def test_resolve_credentialsFile_winsOverAdminToken_keyedByUrl(env: dict[str, str]) -> None:
    """The file's entry for this URL comes second; another URL's entry is not used."""
    path = credentials_path(env)
    save_credential("http://other:1234", Credential(TOKEN_A, "bob"), path)
    admin = _admin_token_file(env)
    resolved = resolve_token(URL, env)
    assert resolved is not None and resolved.token == TOKEN_ADMIN  # no entry for URL yet
    assert resolved.source == str(admin)
    save_credential(URL + "/", Credential(TOKEN_B, "ada"), path)
    resolved = resolve_token("http://localhost:18080", env)  # the same URL, spelled otherwise
    assert resolved is not None
    assert (resolved.token, resolved.source) == (TOKEN_B, str(path))


def test_resolve_adminToken_onlyForTheLocalClustersUrl(env: dict[str, str]) -> None:
    """The admin token of the default config's state dir serves its nginx URL only."""
    _admin_token_file(env)
    assert resolve_token("http://127.0.0.1:9999", env) is None
    moved = {**env, "SAND_NGINX_PORT": "9999"}
    resolved = resolve_token("http://127.0.0.1:9999", moved)
    assert resolved is not None and resolved.token == TOKEN_ADMIN


def test_resolve_nothing_orUnreadableSources_givesNone(env: dict[str, str]) -> None:
    """No token anywhere: None; a broken credentials file or config is skipped, not raised."""
    assert resolve_token(URL, env) is None
    path = credentials_path(env)
    path.parent.mkdir(parents=True)
    path.write_text("not json")
    assert resolve_token(URL, env) is None
    assert resolve_token(URL, {**env, "SAND_NGINX_PORT": "not a port"}) is None


def test_saveCredential_writesMode0600_andKeepsOtherUrls(env: dict[str, str]) -> None:
    """The file is 0600 (its directory 0700) and holds one entry per URL, in the format
    {"URL": {"token": ..., "user": ...}}."""
    path = credentials_path(env)
    save_credential("http://one:1", Credential(TOKEN_A, "ada"), path)
    save_credential("http://two:2/", Credential(TOKEN_B, "bob"), path)
    save_credential("http://one:1", Credential(TOKEN_B, "carl"), path)  # replaces
    assert _mode(path) == 0o600
    assert _mode(path.parent) == 0o700
    assert json.loads(path.read_text()) == {
        "http://one:1": {"token": TOKEN_B, "user": "carl"},
        "http://two:2": {"token": TOKEN_B, "user": "bob"},
    }
    assert [p.name for p in path.parent.iterdir()] == ["credentials.json"]  # no partial left


def test_removeCredential_forgetsOneUrl(env: dict[str, str]) -> None:
    """logout removes the URL's entry only, and says whether there was one."""
    path = credentials_path(env)
    save_credential("http://one:1", Credential(TOKEN_A), path)
    save_credential("http://two:2", Credential(TOKEN_B), path)
    assert remove_credential("http://ONE:1/", path) is True
    assert remove_credential("http://one:1", path) is False
    assert list(read_credentials(path)) == ["http://two:2"]
    assert _mode(path) == 0o600


def test_readCredentials_notAnObject_namesTheFile(tmp_path: Path) -> None:
    """A credentials file that is not a JSON object is an error naming the file."""
    path = tmp_path / "credentials.json"
    path.write_text("[1, 2]")
    with pytest.raises(CredentialsError, match=str(path)):
        read_credentials(path)


def test_writePrivateFile_replacesAReadableFile_with0600(tmp_path: Path) -> None:
    """An existing file readable by others is replaced by one only its owner reads."""
    path = tmp_path / "admin.token"
    path.write_text("old")
    path.chmod(0o644)
    write_private_file(path, "new\n")
    assert path.read_text() == "new\n"
    assert _mode(path) == 0o600


def test_tokenRecords_leaveTheTokenOutOfRepr() -> None:
    """Printing or logging a record never shows its token."""
    assert TOKEN_A not in repr(Credential(TOKEN_A, "ada"))
    resolved = resolve_token(URL, {"SAND_TOKEN": TOKEN_A, "SAND_STATE_DIR": "/nonexistent"})
    assert resolved is not None and TOKEN_A not in repr(resolved)


def test_looksLikeToken_sandPrefixAnd43Base64UrlCharacters() -> None:
    assert looks_like_token(TOKEN_A) and looks_like_token(TOKEN_ADMIN)
    assert not looks_like_token(TOKEN_A[:-1])
    assert not looks_like_token(TOKEN_A + "x")
    assert not looks_like_token("sand_" + "+" * 43)
    assert not looks_like_token("tok_" + "A" * 44)


def test_canonicalUrl_sameKeyForSpellingsOfOneUrl() -> None:
    assert canonical_url("HTTP://LocalHost:18080/") == "http://127.0.0.1:18080"
    assert canonical_url("https://sand.example.org/api/") == "https://sand.example.org/api"
