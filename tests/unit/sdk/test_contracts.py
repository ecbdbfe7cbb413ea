"""The Python side builds every shared name exactly as contract-cases.json says.

The Java side (dev.sand.contracts.ContractCasesTest) checks the same file, so both
languages build the same names from the same inputs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sand import contracts, keys
from sand.contracts import ExecutionStatus, result_document
from sand_bus.constants import FINAL_FLAG
from sand_bus.ttypes import EventFlag, EventKind

CASES = json.loads(
    (
        Path(__file__).resolve().parents[3]
        / "local-bus/contracts/src/test/resources/contract-cases.json"
    ).read_text()
)

BUILDERS: dict[str, Callable[..., str]] = {
    "queue": keys.queue_key,
    "agent": keys.agent_key,
    "reply": keys.reply_key,
    "result": keys.result_key,
    "incarnation": keys.incarnation_key,
    "timers": keys.timers_key,
    "app": keys.app_key,
    "ready": keys.ready_key,
    "broken": keys.broken_key,
    "metrics": keys.metrics_key,
    "data_requests": keys.data_requests_key,
    "data_reply": keys.data_reply_key,
    "redis_user": keys.redis_app_user,
    "grain_topic": keys.grain_topic,
    "results_topic": lambda: keys.RESULTS_TOPIC,
    "sandbox_cgroup": contracts.sandbox_cgroup,
}

RULES = {
    "app": contracts.APP_NAME,
    "grain": contracts.GRAIN_NAME,
    "workflow": contracts.WORKFLOW_NAME,
    "host": contracts.HOST_ID,
    "execution": contracts.EXECUTION_ID,
    "data_request": contracts.DATA_REQUEST_ID,
}


def test_every_case_kind_has_a_builder() -> None:
    """The fixture and the builders cover each other: no shared name goes untested."""
    assert {case["kind"] for case in CASES["keys"]} == set(BUILDERS)


@pytest.mark.parametrize("case", CASES["keys"], ids=lambda case: case["kind"])
def test_key_and_topic_names_match_the_contract(case: dict[str, Any]) -> None:
    """Each key and topic is built from the IDL's template as the fixture states."""
    builder = BUILDERS[case["kind"]]
    args = case["args"]
    # the Python builders take positional names in the template's order
    assert builder(*args.values()) == case["expect"]


def test_acl_patterns_match_the_contract() -> None:
    """An app's ACL user gets exactly the fixture's owned and write-only patterns."""
    acl = CASES["acl"]
    assert keys.app_owned_patterns(acl["app"]) == acl["owned"]
    assert keys.write_only_patterns() == acl["write_only"]
    assert keys.read_only_patterns(acl["app"]) == acl["read_only"]


@pytest.mark.parametrize(
    "case", CASES["names"], ids=lambda case: f"{case['rule']}-{case['value'][:12]}"
)
def test_name_rules_match_the_contract(case: dict[str, Any]) -> None:
    """Valid and invalid names are judged the same as in Java (full match)."""
    assert bool(RULES[case["rule"]].fullmatch(case["value"])) is case["valid"]


@pytest.mark.parametrize(
    "case", CASES["metric_error_labels"], ids=lambda case: repr(case["error"])[:16]
)
def test_metric_error_labels_match_the_contract(case: dict[str, Any]) -> None:
    """A failure's error type becomes the same metric label as in Java (the worker counts
    under it; the agent reads the hash with the same rule)."""
    assert contracts.metric_error_label(case["error"]) == case["label"]


@pytest.mark.parametrize("case", CASES["result_documents"], ids=lambda case: case["status"])
def test_result_document_matches_the_contract(case: dict[str, Any]) -> None:
    """The result document has the IDL's field names and the status by name."""
    document = result_document(ExecutionStatus(case["status"]), **case["fields"])
    assert document == case["expect"]


def test_result_document_refuses_an_undeclared_field() -> None:
    """A key the IDL does not declare cannot sneak into the document."""
    with pytest.raises(ValueError, match="unknown field"):
        result_document(ExecutionStatus.FAILED, execution_id="e", eror="typo")


def test_final_flags() -> None:
    """An execution's last event is FINISHED when it is a RESULT and FAILED when an ERROR."""
    assert FINAL_FLAG == {EventKind.RESULT: EventFlag.FINISHED, EventKind.ERROR: EventFlag.FAILED}


def test_execution_status_names_are_the_generated_ones() -> None:
    """The typed enum has exactly the IDL's statuses."""
    from sand_contracts.ttypes import ExecutionStatus as Generated

    assert {status.value for status in ExecutionStatus} == set(Generated._NAMES_TO_VALUES)


def test_taskTokenKeyLabel_isTheContractsOne() -> None:
    """The engine package spells the task tokens' key label itself (it does not import the
    generated contracts); it must be the IDL's."""
    from sand.contracts import TASK_TOKEN_KEY_LABEL
    from sand_workflows.task_tokens import KEY_LABEL

    assert KEY_LABEL == TASK_TOKEN_KEY_LABEL
