"""Users of the suite's cluster and apps of their own, for the tests of who may see what
(issue 11 and issue 13)."""

from __future__ import annotations

import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from sand.client import SandClient
from sand.cluster.config import ClusterConfig


@dataclass(frozen=True)
class Tenant:
    """A user with a token of their own and a client that calls with it."""

    name: str
    token: str
    token_id: str
    client: SandClient


def make_tenant(admin: SandClient, config: ClusterConfig, prefix: str) -> Tenant:
    """A new user ``<prefix>-<random>`` (the suite's Cassandra keeps its data between runs:
    fresh names each time) and a token of theirs."""
    name = f"{prefix}-{secrets.token_hex(3)}"
    admin.create_user(name)
    new = admin.create_token(user=name, label="test")
    return Tenant(
        name,
        new.token,
        new.info.id,
        SandClient(config.gateway_url, token=new.token, timeout_s=120),
    )


def renamed_app(source: Path, name: str, directory: Path) -> Path:
    """A copy of the app at ``source`` under ``directory``, its ``app.yaml`` naming it ``name``."""
    copy = directory / name
    shutil.copytree(source, copy)
    manifest = copy / "app.yaml"
    original = source.name
    manifest.write_text(manifest.read_text().replace(f"name: {original}", f"name: {name}"))
    return copy
