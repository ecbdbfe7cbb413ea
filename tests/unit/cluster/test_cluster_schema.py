"""cluster.json as the supervisor writes it matches its one declaration, the JSON Schema in the
Java config module (decision 0038). A key written here that the schema lacks, or one of the
wrong type, fails here; the Java side checks that its parser reads exactly the schema's keys."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from sand import contracts
from sand.cluster.cluster_json import CLUSTER_SCHEMA, cluster_document, write_cluster_json
from sand.cluster.config import ClusterConfig, load_config

ROOT = Path(__file__).resolve().parents[3]
SCHEMA: dict[str, Any] = json.loads((ROOT / CLUSTER_SCHEMA).read_text())


def _is_integer(_checker: object, instance: object) -> bool:
    # JSON Schema counts 256.0 as an integer; the Java parser (Jackson's isIntegralNumber)
    # refuses it, and json.dumps writes a float that way: "integer" means a JSON integer here
    return isinstance(instance, int) and not isinstance(instance, bool)


VALIDATOR = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
)(SCHEMA)
# the literal bounds a schema may carry without a contracts.thrift constant: "positive", a TCP
# port, Java's int; any other number must name the constant it comes from
GENERIC_BOUNDS = {0, 1, 65535, 2**31 - 1}

# what varies in the documents the supervisor writes, beyond the defaults
CONFIGS: dict[str, dict[str, dict[str, Any]]] = {
    "default": {},
    "three hosts": {"cluster": {"hosts": 3}},
    "everything set": {
        "cluster": {"host_id": "edge-7"},
        "tracing": {"otlp_endpoint": "https://collector.example:4318/v1/traces"},
        "admission": {
            "max_queued_per_app": 5,
            "max_queued_per_host": contracts.CONFIG_MAX_QUEUED,
            "retry_after_s": contracts.CONFIG_MAX_RETRY_AFTER_S,
            "adaptive": True,
        },
        "executions": {"retention_days": contracts.CONFIG_MAX_RETENTION_DAYS},
        "frontend": {
            "ports": [28081, 28082, 28083],
            "max_payload_kb": contracts.CONFIG_MAX_PAYLOAD_KB,
            "ui_dir": "/opt/sand-gui",
        },
        "sandbox": {
            "backend": "process",
            "cpus": 2,
            "pids_limit": 64,
            "tmp_size_mb": 128,
            "cpu_weight": contracts.CONFIG_MIN_CPU_WEIGHT,
            "max_cpu_weight": contracts.CONFIG_MAX_CPU_WEIGHT,
            "memory_mb": 256,
            "max_memory_mb": 1024,
            "max_sandbox_memory_mb": 2048,
        },
    },
    "docker off": {"docker": {"mode": "off"}},
    "external docker": {"docker": {"mode": "external", "host": "tcp://10.0.0.5:2375"}},
}


def _config(state_dir: Path, overrides: dict[str, dict[str, Any]]) -> ClusterConfig:
    cluster = {"state_dir": str(state_dir), **overrides.get("cluster", {})}
    return load_config(env={}, overrides={**overrides, "cluster": cluster})


def _problems(document: object, *, ignore_required: bool = False) -> list[str]:
    return [
        f"{'.'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
        for error in VALIDATOR.iter_errors(document)
        if not (ignore_required and error.validator == "required")
    ]


def test_schema_isValidDraft202012() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("overrides", CONFIGS.values(), ids=CONFIGS.keys())
def test_everyFileWritten_matchesTheSchema(tmp_path: Path, overrides: Any) -> None:
    """Each cluster.json `sand up` writes (the shared one, and one per host with several)
    has exactly the schema's keys, with its types and within its bounds."""
    config = _config(tmp_path, overrides)
    write_cluster_json(config)
    written = sorted(tmp_path.rglob("cluster.json"))
    assert len(written) == (1 if config.host_count == 1 else 1 + config.host_count)
    for path in written:
        assert _problems(json.loads(path.read_text())) == [], path


def test_schema_catchesAKeyTheWriterInvents(tmp_path: Path) -> None:
    """The check above would see a key the Java services do not read (as docker.base_image
    was) and a value of the wrong type: objects are closed, types exact."""
    config = _config(tmp_path, {})
    document: dict[str, Any] = cluster_document(config, config.host_plans[0], tmp_path)
    document["docker"]["base_image"] = config.base_image
    document["frontend"]["max_payload_kb"] = float(config.max_payload_kb)
    assert _problems(document) == [
        "docker: Additional properties are not allowed ('base_image' was unexpected)",
        f"frontend.max_payload_kb: {float(config.max_payload_kb)} is not of type 'integer'",
    ]


def _subschemas(node: object) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _subschemas(value)
    elif isinstance(node, list):
        for value in node:
            yield from _subschemas(value)


def test_bounds_areTheContractsConstants() -> None:
    """A bound both languages check is a CONFIG_* constant of contracts.thrift; the schema
    names it (x-minimum-from / x-maximum-from) and must carry its value. Every other bound
    is a generic one, so a number copied from the contract cannot hide in the schema."""
    named = set()
    for node in _subschemas(SCHEMA):
        for bound in ("minimum", "maximum"):
            if f"x-{bound}-from" in node:
                constant = node[f"x-{bound}-from"]
                named.add(constant)
                assert node.get(bound) == getattr(contracts, constant), (bound, node)
            elif bound in node:
                assert node[bound] in GENERIC_BOUNDS, (bound, node)
    assert named == {
        "CONFIG_MAX_QUEUED",
        "CONFIG_MAX_RETRY_AFTER_S",
        "CONFIG_MAX_RETENTION_DAYS",
        "CONFIG_MIN_CPU_WEIGHT",
        "CONFIG_MAX_CPU_WEIGHT",
        "CONFIG_MAX_PAYLOAD_KB",
        "CONFIG_MAX_HOSTS",
    }


@pytest.mark.parametrize(
    "path",
    sorted((ROOT / "deploy" / "multi-machine").glob("cluster.*.json")),
    ids=lambda p: p.name,
)
def test_handWrittenExamples_haveOnlyKeysTheServicesRead(path: Path) -> None:
    """The multi-machine examples may leave out what the Java services default (so
    `required` is not asked of them), but every key they carry is declared, with its type."""
    assert _problems(json.loads(path.read_text()), ignore_required=True) == []
