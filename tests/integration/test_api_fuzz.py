"""The API fuzzed against its description: schemathesis generates requests for every
operation of ``frontend/openapi.yaml`` (valid ones, then invalid ones) and sends them to the
real cluster's nginx with the admin's token.

Checks: ``not_a_server_error`` (no 5xx for any input), ``status_code_conformance`` (every
status is one the document lists for the operation) and ``response_schema_conformance``
(every answer's body matches the schema the document gives for its status). Every finding is
collected, not only the first, and the failure lists each with the request that caused it, so
one run names everything to fix.

No operation is excluded from the first pass. The destructive ones run too, and cannot break
the session's cluster: generated names and ids hit no real user, token or app (``DELETE
/v1/users/{name}`` of the admin itself is refused by the server; app names the suite deploys
are not generated from a 63-character pattern by chance), deploys of generated bodies are
refused as invalid archives, and the users and tokens that ``POST`` makes are throwaway.

Two passes: one with every parameter generated (so names and ids are mostly unknown: 404s,
400s), then one with the path parameters pinned to a deployed app (examples/hello as
``fuzzed``) and one of its failed executions, so invoke, logs, describe and the execution
routes do their real work on generated query strings and bodies. The pinned pass leaves out
``DELETE /v1/apps/{app}`` (it would undeploy the app it aims at; the first pass covers it).

Bounded: ``MAX_EXAMPLES`` cases per operation and mode, no Hypothesis deadline (the machine is
shared and slow; a slow answer is not a finding), a 60 s timeout per request.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from sand.client import SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "frontend" / "openapi.yaml"
HELLO = REPO / "examples" / "hello"
FUZZED_APP = "fuzzed"
MAX_EXAMPLES = 40
REQUEST_TIMEOUT_S = 60

# deploy takes an archive: generated bodies go out as raw bytes, as octet-stream ones do
schemathesis.serializer.alias(["application/x-tar", "application/zip"], "application/octet-stream")


@dataclass(frozen=True)
class Finding:
    operation: str
    mode: str
    check: str
    status: int
    request: str
    answer: str

    def __str__(self) -> str:
        return (
            f"{self.operation} [{self.mode}] {self.check}: HTTP {self.status}\n"
            f"    request: {self.request}\n    answer:  {self.answer}"
        )


@dataclass(frozen=True)
class FuzzRun:
    findings: list[Finding]
    statuses: Counter[tuple[str, int]]  # (operation, status) -> answers


def _describe_request(response: Any) -> str:
    """The request as sent (the token left out), from the answer that came back for it."""
    sent = response.request
    parts = [f"{sent.method} {sent.url}"]
    shown = {k: v for k, v in sent.headers.items() if k.lower() not in _USUAL_HEADERS}
    if shown:
        parts.append(f"headers={shown!r}")
    if sent.body:
        body = sent.body if isinstance(sent.body, bytes) else str(sent.body).encode()
        parts.append(f"body={body[:300]!r}")
    return " ".join(parts)


_USUAL_HEADERS = frozenset(
    {"authorization", "user-agent", "accept", "accept-encoding", "connection", "content-length"}
    | {"x-schemathesis-testcaseid"}
)


def _why(exc: BaseException) -> str:
    """The failures' titles, one line."""
    parts = exc.exceptions if isinstance(exc, FailureGroup) else [exc]
    return "; ".join(str(getattr(p, "title", "") or p).strip().splitlines()[0] for p in parts)


@dataclass(frozen=True)
class Pass:
    """One sweep over the operations: ``pinned`` fixes path parameters of the operations
    whose path names them (a deployed app, a recorded execution), so the requests get past
    the 404 of a generated name into the route's own work; ``skip`` leaves operations out of
    this sweep (never out of the unpinned one)."""

    name: str
    pinned: dict[str, dict[str, str]] = field(default_factory=dict)  # path prefix -> params
    skip: frozenset[str] = frozenset()


def _fuzz(
    schema: Any,
    base_url: str,
    token: str,
    checks: dict[str, Callable[..., Any]],
    passes: list[Pass],
) -> FuzzRun:
    """Every operation in both modes, per pass: the first finding per (operation, mode,
    check, status), and how many answers of each status each operation got."""
    findings: dict[tuple[str, str, str, int], Finding] = {}
    statuses: Counter[tuple[str, int]] = Counter()
    headers = {"Authorization": f"Bearer {token}"}

    def exercise(case: Any, label: str, mode: str) -> None:
        response = case.call(base_url=base_url, headers=headers, timeout=REQUEST_TIMEOUT_S)
        statuses[(label, response.status_code)] += 1
        for name, check in checks.items():
            try:
                case.validate_response(response, checks=[check], headers=headers)
            except (AssertionError, FailureGroup) as exc:
                answer = (response.text or "")[:400].replace("\n", " ")
                findings.setdefault(
                    (label, mode, name, response.status_code),
                    Finding(
                        label,
                        mode,
                        name,
                        response.status_code,
                        _describe_request(response),
                        f"{answer}  ({_why(exc)})",
                    ),
                )

    for sweep in passes:
        for result in schema.get_all_operations():
            operation = result.ok()
            label = f"{operation.method.upper()} {operation.path}"
            pinned = next(
                (v for prefix, v in sweep.pinned.items() if operation.path.startswith(prefix)),
                None,
            )
            if label in sweep.skip or (sweep.pinned and pinned is None):
                continue
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                strategy = operation.as_strategy(generation_mode=mode, path_parameters=pinned)
                run = settings(
                    max_examples=MAX_EXAMPLES,
                    deadline=None,
                    database=None,
                    derandomize=True,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=list(HealthCheck),
                )(given(case=strategy)(exercise))
                try:
                    run(label=label, mode=f"{mode.value}{sweep.name}")
                except Unsatisfiable:
                    # nothing to generate in this mode (no parameter or body to make invalid)
                    assert mode is GenerationMode.NEGATIVE, label
    return FuzzRun(list(findings.values()), statuses)


@pytest.fixture(scope="module")
def fuzzed_app(
    cluster: Supervisor, cluster_config: ClusterConfig, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """examples/hello deployed as ``fuzzed`` (process sandbox), and the id of one of its
    executions that failed (an empty name): what the pinned pass aims at."""
    client = SandClient(cluster_config.gateway_url, token=admin_token(cluster_config))
    copy = tmp_path_factory.mktemp("fuzz") / FUZZED_APP
    shutil.copytree(HELLO, copy)
    manifest = copy / "app.yaml"
    manifest.write_text(manifest.read_text().replace("name: hello", f"name: {FUZZED_APP}"))
    client.deploy(copy, backend="process")
    failed = client.invoke(FUZZED_APP, {"name": ""})
    assert failed.status == "FAILED", failed
    yield FUZZED_APP, failed.execution_id
    client.undeploy(FUZZED_APP)


@pytest.fixture(scope="module")
def fuzz_run(cluster_config: ClusterConfig, fuzzed_app: tuple[str, str]) -> FuzzRun:
    app, execution_id = fuzzed_app
    run = _fuzz(
        schemathesis.openapi.from_path(SPEC),
        cluster_config.gateway_url,
        admin_token(cluster_config),
        {
            "not_a_server_error": not_a_server_error,
            "status_code_conformance": status_code_conformance,
            "response_schema_conformance": response_schema_conformance,
        },
        [
            Pass(""),
            Pass(
                f", app={app} execution={execution_id}",
                pinned={
                    "/v1/apps/{app}": {"app": app},
                    "/v1/executions/{id}": {"id": execution_id},
                },
                # the pinned app stays deployed for the rest of the pass
                skip=frozenset({"DELETE /v1/apps/{app}"}),
            ),
        ],
    )
    # shown with -s, and with a failure: how far the fuzzing got into each operation
    for (label, status), count in sorted(run.statuses.items()):
        print(f"{label:<36} {status}  x{count}")
    return run


def test_fuzzedRequests_reachEveryOperation_asTheAdmin(fuzz_run: FuzzRun) -> None:
    """Every operation was called, and the token was taken: each /v1 operation answered
    something other than 401 at least once (else the fuzzing only tested the token check)."""
    operations = {label for label, _ in fuzz_run.statuses}
    assert len(operations) == sum(
        1 for _ in schemathesis.openapi.from_path(SPEC).get_all_operations()
    )
    for label in sorted(operations):
        answered = {status for (op, status) in fuzz_run.statuses if op == label}
        assert answered - {401}, f"{label}: only 401 answers"


def test_fuzzedRequests_neverAnswerAServerError(fuzz_run: FuzzRun) -> None:
    """No request the document allows, nor one it forbids, makes the server answer 5xx."""
    errors = [f for f in fuzz_run.findings if f.check == "not_a_server_error"]
    assert not errors, f"{len(errors)} server error(s):\n" + "\n".join(map(str, errors))


def test_fuzzedAnswers_matchTheDocumentedSchemas(fuzz_run: FuzzRun) -> None:
    """Every answer has a status the document lists for its operation, with that schema."""
    mismatches = [f for f in fuzz_run.findings if f.check != "not_a_server_error"]
    assert not mismatches, f"{len(mismatches)} mismatch(es):\n" + "\n".join(map(str, mismatches))
