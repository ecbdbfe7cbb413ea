"""The JSON Schemas of app.yaml and the native workflow format: valid Draft 2020-12, every
app of the repository passes, bad files fail, and they agree with the loaders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from sand import contracts
from sand.app import AppError, load_app
from sand.schemas import SCHEMAS, load_schema
from sand_workflows import WorkflowError, load_workflow_text

from .conftest import EXAMPLES, REPO, AppFactory

APPS = sorted(
    [*EXAMPLES.iterdir(), *(REPO / "tests/integration/apps").iterdir()],
    key=lambda p: p.name,
)
APPS = [p for p in APPS if (p / "app.yaml").is_file()]


def validator(which: str) -> jsonschema.Draft202012Validator:
    schema = load_schema(which)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(which: str, document: Any) -> list[str]:
    return [error.message for error in validator(which).iter_errors(document)]


def test_schemas_areValidDraft202012() -> None:
    """Both schemas are themselves valid JSON Schemas of Draft 2020-12."""
    for which in SCHEMAS:
        schema = load_schema(which)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(schema)


def test_appSchema_namePatterns_areTheContracts() -> None:
    """The name rules in the schema are the ones the loader enforces (sand.contracts)."""
    schema = load_schema("app")
    props = schema["properties"]
    assert props["name"]["pattern"] == f"^{contracts.APP_NAME.pattern}$"
    assert props["grains"]["propertyNames"]["pattern"] == f"^{contracts.GRAIN_NAME.pattern}$"
    assert props["workflows"]["propertyNames"]["pattern"] == f"^{contracts.WORKFLOW_NAME.pattern}$"
    host = schema["$defs"]["hosts"]["items"]["pattern"]
    assert host == f"^{contracts.HOST_ID.pattern}$"


@pytest.mark.parametrize("app", APPS, ids=lambda p: p.name)
def test_everyRepositoryApp_validates(app: Path) -> None:
    """app.yaml of every example and test app, and each native workflow, pass the schemas."""
    manifest = yaml.safe_load((app / "app.yaml").read_text())
    assert errors("app", manifest) == []
    for file in manifest["workflows"].values():
        path = app / file
        definition = yaml.safe_load(path.read_text())  # JSON is YAML here
        if "StartAt" in definition or "States" in definition:
            continue  # Amazon States Language: not the native format
        assert errors("workflow", definition) == [], path


BAD_APPS = [
    ({"name": "Bad", "grains": {"a": "a.py"}, "workflows": {"main": "w.yaml"}}, "does not match"),
    ({"name": "x", "grains": {}, "workflows": {"main": "w.yaml"}}, "should be non-empty"),
    ({"name": "x", "grains": {"a": "a.txt"}, "workflows": {"main": "w.yaml"}}, "a.txt"),
    ({"name": "x", "grains": {"a": "/abs/a.py"}, "workflows": {"m": "w.yaml"}}, "/abs/a.py"),
    ({"name": "x", "grains": {"a": "a.py"}, "workflows": {"m": "w.yaml"}, "extra": 1}, "extra"),
    (
        {
            "name": "x",
            "grains": {"a": {"file": "a.py", "events_per_instance": 0}},
            "workflows": {"m": "w.yaml"},
        },
        "events_per_instance",
    ),
    (
        {
            "name": "x",
            "grains": {"a": "a.py"},
            "workflows": {"m": "w.yaml"},
            "limits": {"timeout_s": True},
        },
        "True",
    ),
    (
        {
            "name": "x",
            "grains": {"a": "a.py"},
            "workflows": {"m": "w.yaml"},
            "placement": {"hosts": []},
        },
        "should be non-empty",
    ),
]


@pytest.mark.parametrize(("document", "said"), BAD_APPS)
def test_badApp_isRejected(document: dict[str, Any], said: str) -> None:
    """Each bad manifest has at least one error, and the error says what is wrong."""
    found = errors("app", document)
    assert found, document
    assert any(said in message for message in found), found


BAD_WORKFLOWS = [
    ({"grains": {"a": {}}}, "'entry' is a required property"),
    ({"entry": "a", "grains": {"a": {"nxt": "b"}}}, "nxt"),
    (
        {"entry": "a", "grains": {"a": {"next": "b", "potentialNext": ["c"]}}, "b": {}},
        "should not be valid",
    ),
    ({"entry": "a", "grains": {"a": {"join": "yes"}}}, "'yes' is not of type 'boolean'"),
    ({"entry": "a", "grains": {"a": {"timeoutSeconds": 0}}}, "0 is less than or equal"),
]


@pytest.mark.parametrize(("document", "said"), BAD_WORKFLOWS)
def test_badNativeWorkflow_isRejected(document: dict[str, Any], said: str) -> None:
    found = errors("workflow", document)
    assert any(said in message for message in found), found


# -- agreement with the loaders, both ways ---------------------------------------------------

GRAIN = "def handle(event, context):\n    return event\n"


@pytest.mark.parametrize(
    ("extra", "valid"),
    [
        ("limits: {timeout_s: 2.5, payload_kb: 10}\n", True),
        ("limits: {memory_mb: 0}\n", False),
        ("limits: {cpu_weight: 50, memory_mb: 256}\n", True),
        ("limits: {cpu_weight: 0}\n", False),
        ("limits: {cpu_weight: 10001}\n", False),
        ("limits: {timeout_s: yes}\n", False),
        ("placement: {hosts: [host-1], grains: {a: [host-1]}}\n", True),
        ("placement: {hosts: [host-1, host-1]}\n", False),
        ("owner: me\n", False),
    ],
)
def test_appSchema_agreesWithLoadApp(make_app: AppFactory, extra: str, valid: bool) -> None:
    """The schema and load_app accept and refuse the same manifests (for these cases)."""
    text = "name: x\ngrains: {a: a.py}\nworkflows: {main: wf.yaml}\n" + extra
    root = make_app(text, {"a.py": GRAIN, "wf.yaml": "entry: a\ngrains: {a: {}}\n"})
    try:
        load_app(root)
        loaded = True
    except AppError:
        loaded = False
    assert loaded is valid
    assert (errors("app", yaml.safe_load(text)) == []) is valid


@pytest.mark.parametrize(
    ("text", "loads", "schema_ok"),
    [
        ("entry: a\ngrains: {a: {next: [b, c]}, b: {join: true}, c: {next: b}}\n", True, True),
        ("entry: a\ngrains: {a: {next: [b]}, b: {timeoutSeconds: 1.5}}\n", True, True),
        ("entry: a\ngrains: {a: {potentialNext: b, next: []}, b: }\n", True, True),
        ("entry: a\ngrains: {a: {next: b, potentialNext: b}, b: {}}\n", False, False),
        ("entry: a\ngrains: {a: {timeoutSeconds: -1}}\n", False, False),
        ("entry: a\ngrains: {a: {join: 1}}\n", False, False),
        ("entry: a\ngrains: {a: {}}\nexit: a\ncomment: hello\n", True, True),
        ("entry: a\ngrains: {a: {}}\nstart: a\n", False, False),
        # graph rules only the loader checks: the schema describes the shape
        ("entry: a\ngrains: {a: {}, b: {}}\n", False, True),
        ("entry: z\ngrains: {a: {}}\n", False, True),
    ],
)
def test_workflowSchema_agreesWithTheLoader(text: str, loads: bool, schema_ok: bool) -> None:
    """The schema refuses what the native loader refuses for its shape (fields, types,
    next xor potentialNext); graph rules (reachability, names) are the loader's alone."""
    try:
        load_workflow_text(text, source="wf.yaml")
        loaded = True
    except WorkflowError:
        loaded = False
    assert loaded is loads
    assert (errors("workflow", yaml.safe_load(text)) == []) is schema_ok
