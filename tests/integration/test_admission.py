"""Admission control on the real stack (decision 0023): an app whose queue on the host holds
its bound (``[admission] max_queued_per_app``) gets 429 with Retry-After at once, for sync and
async calls, through nginx; every async call answered 202 still ends SUCCEEDED (none is
dropped); the CLI says "busy ... retry in N s"; and once the queue drained a normal call is
answered 200. The ``jam`` app has one slow grain with one instance at a time, so its queue
fills deterministically."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner
from sand.cli import cli
from sand.client import SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

JAM = Path(__file__).resolve().parent / "apps" / "jam"
SLEEP_S = 0.4  # one event at a time: the queue drains 2.5 events a second
# The first call holds the one instance this long, so the queue does not drain while the burst,
# the sync call and the CLI find it full (with the queue draining 2.5 events a second, a CLI
# call that started 0.4 s after the burst could find room and be answered 202).
HOLD_S = 8.0


@pytest.fixture(scope="module")
def jam(cluster: Supervisor, cluster_config: ClusterConfig) -> Iterator[requests.Session]:
    token = admin_token(cluster_config)
    client = SandClient(cluster_config.gateway_url, token=token)
    client.deploy(JAM, backend="process")
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    try:
        yield session
    finally:
        client.undeploy("jam")


def invoke(
    session: requests.Session, gateway: str, n: int, mode: str, sleep_s: float
) -> requests.Response:
    return session.post(
        f"{gateway}/v1/apps/jam/invoke",
        params={"mode": mode},
        json={"n": n, "sleep_s": sleep_s},
        timeout=60,
    )


def ended(session: requests.Session, gateway: str, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Each execution's document once it is no longer RUNNING (up to 120 s)."""
    done: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + 120
    while len(done) < len(ids) and time.monotonic() < deadline:
        for execution_id in ids:
            if execution_id in done:
                continue
            answer = session.get(f"{gateway}/v1/executions/{execution_id}", timeout=10)
            if answer.status_code == 200 and answer.json()["status"] != "RUNNING":
                done[execution_id] = answer.json()
        time.sleep(0.3)
    return done


def test_appPastItsBound_refused429_acceptedAsyncAllSucceed_thenServesNormally(
    jam: requests.Session, cluster_config: ClusterConfig
) -> None:
    """A burst of async calls past the bound: some 202, the rest 429 with Retry-After and a
    body naming the app and the bound; a sync call and the CLI are refused the same way while
    the queue is full; every 202 ends SUCCEEDED with its own input; then a sync call is 200."""
    gateway = cluster_config.gateway_url
    bound = cluster_config.admission.max_queued_per_app
    retry = cluster_config.admission.retry_after_s
    burst = bound + 16

    holder = invoke(jam, gateway, burst + 1, "async", HOLD_S)
    assert holder.status_code == 202, holder.text
    time.sleep(0.5)  # the worker takes the holder's event: the instance is busy for HOLD_S
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: invoke(jam, gateway, n, "async", SLEEP_S), range(burst)))
    accepted = {a.json()["execution_id"]: n for n, a in enumerate(answers) if a.status_code == 202}
    accepted[holder.json()["execution_id"]] = burst + 1
    refused = [a for a in answers if a.status_code == 429]
    sync = invoke(jam, gateway, burst, "sync", 0)
    cli_run = CliRunner(mix_stderr=False).invoke(
        cli,
        ["invoke", "jam", "--input", '{"n": -1}', "--json"],
        env={"SAND_URL": gateway, "SAND_TOKEN": admin_token(cluster_config)},
    )
    print(
        f"admission: bound {bound}, burst {burst}: accepted {len(accepted)}, "
        f"refused {len(refused)}; sync while full: {sync.status_code}"
    )

    assert len(accepted) - 1 + len(refused) == burst, [a.status_code for a in answers]
    assert len(accepted) >= bound  # the queue filled up to its bound
    assert refused, "nothing was refused past the bound"
    for answer in [*refused, sync]:
        assert answer.status_code == 429, answer.text
        assert answer.headers["Retry-After"] == str(retry)
        body = answer.json()
        assert body["retry_after_s"] == retry
        assert "application 'jam' is at its bound" in body["error"]
        assert f"at most {bound} per application" in body["error"]
    assert cli_run.exit_code == 2, cli_run.stderr
    assert '"retry_after_s": ' in cli_run.stderr and "Traceback" not in cli_run.stderr

    docs = ended(jam, gateway, list(accepted))
    lost = [execution_id for execution_id in accepted if execution_id not in docs]
    print(f"admission: accepted {len(accepted)}, ended {len(docs)}, lost {len(lost)}")
    assert not lost, f"{len(lost)} accepted executions never ended, e.g. {lost[:3]}"
    for execution_id, n in accepted.items():
        assert docs[execution_id]["status"] == "SUCCEEDED", docs[execution_id]
        assert docs[execution_id]["output"] == {"n": n}

    control = invoke(jam, gateway, -2, "sync", 0)
    assert control.status_code == 200, control.text
    assert control.json()["output"] == {"n": -2}
