"""SandClient and identity: the token it sends, what 401 and 403 say to do, the users and
tokens calls, and the internal secret for a host agent."""

from __future__ import annotations

from pathlib import Path

import pytest
from sand.client import SandApiError, SandClient
from sand.credentials import Credential, credentials_path, save_credential

from tests.unit.fake_sand import FakeSand

pytestmark = pytest.mark.usefixtures("isolated")


def _authorization(sand: FakeSand) -> str | None:
    return sand.store.requests[-1].headers.get("Authorization")


@pytest.mark.timeout(30)
def test_givenToken_isSentAsBearer(sand: FakeSand) -> None:
    """Every call carries Authorization: Bearer <token>."""
    token = sand.store.issue("ada")
    identity = SandClient(sand.gateway_url, token=token).whoami()
    assert (identity.user, identity.role) == ("ada", "user")
    assert _authorization(sand) == f"Bearer {token}"


@pytest.mark.timeout(30)
def test_noTokenGiven_usesTheResolvedOne(sand: FakeSand, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a token: $SAND_TOKEN, else the credentials file's entry for the URL."""
    saved, env = sand.store.issue("ada"), sand.store.issue("admin")
    save_credential(sand.gateway_url, Credential(saved, "ada"), credentials_path())
    client = SandClient(sand.gateway_url)
    assert client.whoami().user == "ada"
    assert client.token_source == str(credentials_path())
    monkeypatch.setenv("SAND_TOKEN", env)
    assert SandClient(sand.gateway_url).whoami().user == "admin"
    assert _authorization(sand) == f"Bearer {env}"


@pytest.mark.timeout(30)
def test_401_withoutToken_saysToSignIn(sand: FakeSand) -> None:
    """No token anywhere: no header is sent and the error says `sand login` or SAND_TOKEN."""
    with pytest.raises(SandApiError) as refused:
        SandClient(sand.gateway_url).apps()
    assert _authorization(sand) is None
    assert refused.value.status == 401
    message = str(refused.value)
    assert "not signed in" in message and "sand login" in message and "SAND_TOKEN" in message


@pytest.mark.timeout(30)
def test_401_refusedToken_saysWhereItCameFrom_andNeverShowsIt(
    sand: FakeSand, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A revoked or unknown token: the error names its source and says to log in again."""
    unknown = "sand_" + "Z" * 43
    monkeypatch.setenv("SAND_TOKEN", unknown)
    with pytest.raises(SandApiError) as refused:
        SandClient(sand.gateway_url).whoami()
    message = str(refused.value)
    assert refused.value.status == 401
    assert "refused (unknown, revoked or expired)" in message
    assert "$SAND_TOKEN" in message and "sand login" in message
    assert unknown not in message


@pytest.mark.timeout(30)
def test_403_saysAnAdminIsNeeded(sand: FakeSand) -> None:
    """A user calling an admin route gets the server's reason and that it needs an admin."""
    with pytest.raises(SandApiError) as refused:
        SandClient(sand.gateway_url, token=sand.store.issue("ada")).users()
    assert refused.value.status == 403
    assert "only an admin may manage users" in str(refused.value)
    assert "admin" in str(refused.value).split("(")[-1]


@pytest.mark.timeout(30)
def test_usersAndTokens_roundTrip(sand: FakeSand) -> None:
    """An admin makes a user and a token for them; the token works; revoking ends it."""
    admin = SandClient(sand.gateway_url, token=sand.store.issue("admin"))
    made = admin.create_user("bob")
    assert (made.name, made.role) == ("bob", "user")
    assert "bob" in {user.name for user in admin.users()}
    assert sand.store.requests[-2].body == {"name": "bob", "role": "user"}
    new = admin.create_token(user="bob", label="laptop", expires_in_days=7)
    assert sand.store.requests[-1].body == {"user": "bob", "label": "laptop", "expires_in_days": 7}
    assert new.token not in repr(new)
    bob = SandClient(sand.gateway_url, token=new.token)
    assert bob.whoami().user == "bob"
    assert [t.id for t in bob.tokens()] == [new.info.id]
    assert [t.label for t in admin.tokens("bob")] == ["laptop"]
    assert sand.store.requests[-1].path == "/v1/tokens?user=bob"
    bob.revoke_token(new.info.id)
    with pytest.raises(SandApiError) as refused:
        bob.whoami()
    assert refused.value.status == 401


@pytest.mark.timeout(30)
def test_deleteUser_returnsTokensRevoked(sand: FakeSand) -> None:
    admin = SandClient(sand.gateway_url, token=sand.store.issue("admin"))
    sand.store.issue("ada")
    sand.store.issue("ada")
    assert admin.delete_user("ada") == 2
    with pytest.raises(SandApiError) as missing:
        admin.delete_user("ada")
    assert missing.value.status == 404


@pytest.mark.timeout(30)
def test_internalSecret_isSentToAnAgent_andNoToken(
    sand: FakeSand, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the internal secret the client sends X-Sand-Internal and no bearer token,
    even when one could be resolved."""
    monkeypatch.setenv("SAND_TOKEN", sand.store.issue("ada"))
    agent = SandClient(sand.agent_url, internal_secret=sand.store.internal_secret)
    assert agent.whoami().user == "system"
    sent = sand.store.requests[-1].headers
    assert sent["X-Sand-Internal"] == sand.store.internal_secret
    assert "Authorization" not in sent


@pytest.mark.timeout(30)
def test_bearer_notReplacedByANetrcEntry(
    sand: FakeSand, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ~/.netrc entry for the host (requests would send it as Basic auth) does not
    replace the token."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    token = sand.store.issue("ada")
    assert SandClient(sand.gateway_url, token=token).whoami().user == "ada"
    assert _authorization(sand) == f"Bearer {token}"
