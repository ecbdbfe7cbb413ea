"""The workflow conformance suite on the real cluster: every case of
``tests/conformance/cases`` runs as a workflow of one deployed application, through nginx,
the frontends, the local bus and forked grain instances, with real waits, retries and
timeouts — and must end exactly as under the emulator."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from sand.client import Execution, SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

pytestmark = pytest.mark.integration

_CASES_FILE = Path(__file__).resolve().parents[1] / "conformance" / "cases.py"
_spec = importlib.util.spec_from_file_location("conformance_cases_cluster", _CASES_FILE)
assert _spec is not None and _spec.loader is not None
cases_module = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = cases_module
_spec.loader.exec_module(cases_module)

CASES = cases_module.load_cases()
# Cases with mocks are left out: mocks are a local-testing feature (the emulator's and the
# in-process driver's, ``sand.mocks``); on the cluster every grain runs for real.
DEPLOYED = [c for c in CASES if c.mocks is None]
APP = "conformance"


def workflow_name(case_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", case_id.replace("/", "__"))


@pytest.fixture(scope="module")
def results(
    cluster: Supervisor, cluster_config: ClusterConfig, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Execution]]:
    """Deploys the conformance app with every case as a workflow, starts all executions
    asynchronously, and collects their results."""
    root = tmp_path_factory.mktemp("conformance-cluster") / "app"
    shutil.copytree(cases_module.APP_DIR, root)
    (root / "workflows").mkdir(exist_ok=True)
    manifest = cases_module.app_manifest()
    manifest["workflows"] = {}
    for case in DEPLOYED:
        name = workflow_name(case.id)
        (root / "workflows" / f"{name}.yaml").write_text(case.definition_text())
        manifest["workflows"][name] = f"workflows/{name}.yaml"
    (root / "app.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    # ~330 executions started by 16 callers outrun the sandbox: past the admission bound
    # (decision 0023) a start is refused with 429 and tried again after its Retry-After
    client = SandClient(
        cluster_config.gateway_url,
        token=admin_token(cluster_config),
        timeout_s=120,
        busy_wait_s=240,
    )
    client.deploy(root, backend="docker")
    try:
        with ThreadPoolExecutor(max_workers=16) as pool:
            started = dict(
                zip(
                    [c.id for c in DEPLOYED],
                    pool.map(
                        lambda c: client.invoke(
                            APP, c.input, workflow=workflow_name(c.id), wait=False
                        ).execution_id,
                        DEPLOYED,
                    ),
                    strict=True,
                )
            )
        done: dict[str, Execution] = {}
        deadline = time.monotonic() + 240
        while len(done) < len(started) and time.monotonic() < deadline:
            for case_id, execution_id in started.items():
                if case_id not in done:
                    result = client.result(execution_id)
                    if result.status != "RUNNING":
                        done[case_id] = result
            time.sleep(0.5)
        yield done
    finally:
        client.undeploy(APP)


@pytest.mark.timeout(400)
@pytest.mark.parametrize("case", DEPLOYED, ids=[c.id for c in DEPLOYED])
def test_case_conformsOnCluster(case: Any, results: dict[str, Execution]) -> None:
    """The execution on the cluster ends exactly as the case expects."""
    result = results.get(case.id)
    assert result is not None, "the execution did not finish within 240 s"
    if result.status == "SUCCEEDED":
        problems = case.mismatches(output=result.output)
    else:
        problems = case.mismatches(error=result.error, cause=result.cause)
    assert problems == [], case.description


def test_onlyTheMockCasesStayLocal() -> None:
    """Every case runs on the cluster but those with ``mocks:`` (a local-testing feature:
    the cluster runs every grain for real); they all live under ``cases/mocks/`` and run
    in-process and under the emulator."""
    left_out = {c.id for c in CASES} - {c.id for c in DEPLOYED}
    assert left_out == {c.id for c in CASES if c.id.startswith("mocks/")}
    assert len(left_out) >= 6 and len(DEPLOYED) == len(CASES) - len(left_out)
