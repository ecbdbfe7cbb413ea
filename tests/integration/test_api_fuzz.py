"""The API fuzzed against its description: schemathesis generates requests for every
operation of ``frontend/openapi.yaml`` (valid ones, then invalid ones) and sends them to the
real cluster's nginx with the admin's token.

Checks: ``not_a_server_error`` (no 5xx for any input), ``status_code_conformance`` (every
status is one the document lists for the operation) and ``response_schema_conformance``
(every answer's body matches the schema the document gives for its status). Every finding is
collected, not only the first, and the failure lists each with the request that caused it, so
one run names everything to fix.

Nothing is excluded. The destructive operations run too, and cannot break the session's
cluster: generated names and ids hit no real user, token or app (``DELETE /v1/users/{name}``
of the admin itself is refused by the server; app names the suite deploys are not generated
from a 63-character pattern by chance), deploys of generated bodies are refused as invalid
archives, and the users and tokens that ``POST`` makes are throwaway.

Bounded: ``MAX_EXAMPLES`` cases per operation and mode, no Hypothesis deadline (the machine is
shared and slow; a slow answer is not a finding), a 60 s timeout per request.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
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

SPEC = Path(__file__).resolve().parents[2] / "frontend" / "openapi.yaml"
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


def _fuzz(
    schema: Any,
    base_url: str,
    token: str,
    checks: dict[str, Callable[..., Any]],
) -> FuzzRun:
    """Every operation in both modes: the first finding per (operation, mode, check, status),
    and how many answers of each status each operation got."""
    findings: dict[tuple[str, str, str, int], Finding] = {}
    statuses: Counter[tuple[str, int]] = Counter()
    headers = {"Authorization": f"Bearer {token}"}
    for result in schema.get_all_operations():
        operation = result.ok()
        label = f"{operation.method.upper()} {operation.path}"
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            def exercise(case: Any, label: str, mode: str) -> None:
                response = case.call(base_url=base_url, headers=headers, timeout=REQUEST_TIMEOUT_S)
                statuses[(label, response.status_code)] += 1
                for name, check in checks.items():
                    try:
                        case.validate_response(response, checks=[check], headers=headers)
                    except (AssertionError, FailureGroup) as exc:
                        why = _why(exc)
                        answer = (response.text or "")[:400].replace("\n", " ")
                        key = (label, mode, name, response.status_code)
                        findings.setdefault(
                            key,
                            Finding(
                                label,
                                mode,
                                name,
                                response.status_code,
                                _describe_request(response),
                                f"{answer}  ({why})",
                            ),
                        )

            run = settings(
                max_examples=MAX_EXAMPLES,
                deadline=None,
                database=None,
                derandomize=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )(given(case=operation.as_strategy(generation_mode=mode))(exercise))
            try:
                run(label=label, mode=mode.value)
            except Unsatisfiable:
                # nothing to generate in this mode (no parameter or body to make invalid)
                assert mode is GenerationMode.NEGATIVE, label
    return FuzzRun(list(findings.values()), statuses)


@pytest.fixture(scope="module")
def fuzz_run(cluster: Supervisor, cluster_config: ClusterConfig) -> FuzzRun:
    schema = schemathesis.openapi.from_path(SPEC)
    run = _fuzz(
        schema,
        cluster_config.gateway_url,
        admin_token(cluster_config),
        {
            "not_a_server_error": not_a_server_error,
            "status_code_conformance": status_code_conformance,
            "response_schema_conformance": response_schema_conformance,
        },
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
