"""The client cannot drift from ``frontend/openapi.yaml``: every operation the document
describes has a ``SandClient`` method (the table ``sand.client.operations``) taking each of
its parameters, every success schema's properties are the fields of the record it becomes
(required ones without a default, optional ones with), every status it documents raises
an exception class of its own, and the statuses and history event types it enumerates are
the ones the code produces. Each check returns the mismatches, one line each naming the
operation, schema, property or status, so a failure says what to add where.

``SAND_OPENAPI=path`` checks another copy of the document (another branch's, say).
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from sand.client import STATUS_ERRORS, ClientError, SandApiError, SandClient, ServerError
from sand.client.errors import error_class
from sand.client.operations import OPERATIONS, Operation
from sand.contracts import ExecutionStatus
from sand_workflows.history import TYPES as HISTORY_TYPES

REPO = Path(__file__).resolve().parents[3]
SPEC_PATH = Path(os.environ.get("SAND_OPENAPI", REPO / "frontend" / "openapi.yaml"))
METHODS = ("get", "head", "post", "put", "patch", "delete")

# What the client does that this copy of the document does not describe yet (or, for
# "enums", what the document describes that the code's lists lack): issue 13's
# contract (api.md), which the frontend's branch adds to openapi.yaml, and `trace`, which the
# invoke description mentions but no schema lists. Each entry is the exact line its check
# prints. A test fails as soon as the document catches up with one (take it out then), and
# for any mismatch not listed here.
PENDING_IN_DOCUMENT: dict[str, frozenset[str]] = {
    "operations": frozenset(),
    "parameters": frozenset(),
    "models": frozenset(),
    "statuses": frozenset(),
    "enums": frozenset(),
}


def unexpected(check: str, problems: list[str]) -> list[str]:
    """The problems not pending, and the pending ones the document has since resolved."""
    pending = PENDING_IN_DOCUMENT[check]
    return [p for p in problems if p not in pending] + [
        f"resolved in openapi.yaml, remove from PENDING_IN_DOCUMENT[{check!r}]: {p}"
        for p in sorted(pending - set(problems))
    ]


Spec = dict[str, Any]


def load_spec(path: Path = SPEC_PATH) -> Spec:
    spec: Spec = yaml.safe_load(path.read_text())
    return spec


def documented(spec: Spec) -> dict[tuple[str, str], dict[str, Any]]:
    """(METHOD, path) -> the operation object, with the path's own parameters merged in."""
    found = {}
    for path, item in spec.get("paths", {}).items():
        shared = item.get("parameters", [])
        for method in METHODS:
            if method in item:
                operation = dict(item[method])
                operation["parameters"] = shared + operation.get("parameters", [])
                found[(method.upper(), path)] = operation
    return found


def resolve(spec: Spec, node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        target: Any = spec
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def properties(spec: Spec, schema: Any) -> tuple[dict[str, Any], set[str]]:
    """An object schema's properties and required names, ``allOf`` parts merged."""
    schema = resolve(spec, schema) or {}
    props: dict[str, Any] = {}
    required: set[str] = set()
    for part in schema.get("allOf", []):
        more, needed = properties(spec, part)
        props.update(more)
        required |= needed
    props.update(schema.get("properties", {}))
    required |= set(schema.get("required", []))
    return props, required


def alternatives(spec: Spec, schema: Any) -> list[Any]:
    """The schemas an answer may match: each of ``anyOf``/``oneOf``, else the schema."""
    schema = resolve(spec, schema) or {}
    choices = schema.get("anyOf") or schema.get("oneOf")
    return [c for choice in choices for c in alternatives(spec, choice)] if choices else [schema]


def success_schemas(spec: Spec, operation: dict[str, Any]) -> list[tuple[str, Any]]:
    """(status, JSON schema) of each documented success answer with a JSON body."""
    found = []
    for status, response in operation.get("responses", {}).items():
        if not str(status).startswith("2"):
            continue
        content = resolve(spec, response).get("content", {})
        if "application/json" in content and "schema" in content["application/json"]:
            found.append((str(status), content["application/json"]["schema"]))
    return found


# -- the checks -------------------------------------------------------------------------------


def check_operations(spec: Spec, table: tuple[Operation, ...] = OPERATIONS) -> list[str]:
    """Every documented operation has a row; every row's operation is documented."""
    rows = {(op.method, op.path) for op in table}
    docs = set(documented(spec))
    problems = [
        f"{m} {p}: documented in openapi.yaml but no SandClient method serves it "
        "(add one and a row to sand.client.operations.OPERATIONS)"
        for m, p in sorted(docs - rows)
    ]
    problems += [
        f"{m} {p}: a row of OPERATIONS, but openapi.yaml does not describe it"
        for m, p in sorted(rows - docs)
    ]
    return problems


def check_parameters(spec: Spec, table: tuple[Operation, ...] = OPERATIONS) -> list[str]:
    """Every path/query parameter and JSON body property reaches a keyword of the method."""
    docs = documented(spec)
    problems = []
    for row in table:
        where = f"{row.method} {row.path}"
        method = getattr(SandClient, row.client_method, None)
        if method is None:
            problems.append(f"{where}: SandClient has no method {row.client_method!r}")
            continue
        if (row.method, row.path) not in docs:
            continue
        accepted = set(inspect.signature(method).parameters) - {"self"}
        operation = docs[(row.method, row.path)]
        names = {
            resolve(spec, p)["name"]
            for p in operation["parameters"]
            if resolve(spec, p)["in"] in ("path", "query")
        }
        body = resolve(spec, operation.get("requestBody", {})).get("content", {})
        if "application/json" in body:
            names |= set(properties(spec, body["application/json"].get("schema", {}))[0])
        for name in sorted(names - set(row.params)):
            problems.append(
                f"{where}: parameter {name!r} is documented but {row.client_method}() "
                "does not take it (add a keyword and map it in OPERATIONS)"
            )
        for name in sorted(set(row.params) - names):
            problems.append(f"{where}: OPERATIONS maps {name!r}, which is not documented")
        for name, keyword in sorted(row.params.items()):
            if keyword not in accepted:
                problems.append(
                    f"{where}: {row.client_method}() has no keyword {keyword!r} for {name!r}"
                )
    return problems


def _dataclasses_in(hint: Any) -> list[type]:
    """The dataclasses a field's type names (through ``X | None``, ``tuple[X, ...]``, ...)."""
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return [hint]
    found: list[type] = []
    for arg in typing.get_args(hint):
        if arg is not Ellipsis:
            found += _dataclasses_in(arg)
    return found


def _fields(cls: type) -> dict[str, tuple[bool, Any]]:
    """A record's schema-facing fields: name -> (required, type), flattened records inlined."""
    hints = typing.get_type_hints(cls)
    local = getattr(cls, "LOCAL_FIELDS", frozenset())
    flattened = getattr(cls, "FLATTENED", frozenset())
    found: dict[str, tuple[bool, Any]] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in local or f.name == getattr(cls, "OPEN_FIELD", None):
            continue
        if f.name in flattened:
            found.update(_fields(hints[f.name]))
            continue
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        found[f.name] = (required, hints[f.name])
    return found


Uses = dict[type, list[tuple[str, dict[str, Any], set[str]]]]


def _collect(spec: Spec, schema: Any, cls: type, where: str, uses: Uses) -> None:
    """Record that ``schema`` (at ``where``) becomes ``cls``, and so on for nested records."""
    props, required = properties(spec, schema)
    uses.setdefault(cls, []).append((where, props, required))
    fields = _fields(cls)
    for name, prop in props.items():
        if name not in fields:
            continue
        prop = resolve(spec, prop)
        if prop.get("type") == "array" and "items" in prop:
            prop = resolve(spec, prop["items"])
        for nested in _dataclasses_in(fields[name][1]):
            _collect(spec, prop, nested, f"{where}.{name}", uses)


def check_models(spec: Spec, table: tuple[Operation, ...] = OPERATIONS) -> list[str]:
    """Every success schema's properties are its record's fields, required as the schema says
    (a record several schemas share: required where every one of them requires it)."""
    docs = documented(spec)
    uses: Uses = {}
    problems = []
    for row in table:
        if (row.method, row.path) not in docs:
            continue
        for status, schema in success_schemas(spec, docs[(row.method, row.path)]):
            where = f"{row.method} {row.path} {status}"
            props, _ = properties(spec, schema)
            if row.model is None:
                if props and row.unmodelled is None:
                    problems.append(
                        f"{where}: answers {sorted(props)} but OPERATIONS names no model"
                    )
                continue
            if row.envelope is not None:
                if row.envelope not in props:
                    problems.append(f"{where}: no property {row.envelope!r} holds the list")
                    continue
                for other in sorted(set(props) - {row.envelope}):
                    problems.append(
                        f"{where}: property {other!r} beside {row.envelope!r} is dropped"
                    )
                schema = resolve(spec, props[row.envelope]).get("items", {})
            for i, alternative in enumerate(alternatives(spec, schema)):
                _collect(spec, alternative, row.model, where + (f" #{i}" if i else ""), uses)
    for cls, seen in uses.items():
        fields = _fields(cls)
        is_open = getattr(cls, "OPEN_FIELD", None) is not None
        everywhere = set.intersection(*(required for _, _, required in seen))
        documented_props: set[str] = set()
        for where, props, required in seen:
            documented_props |= set(props)
            for name in sorted(set(props) - set(fields)):
                if is_open and name not in required:
                    continue  # kept in the record's open mapping
                problems.append(
                    f"{where}: property {name!r} has no field in {cls.__name__} (add it)"
                )
        for name, (required, _) in sorted(fields.items()):
            if name not in documented_props:
                problems.append(
                    f"{cls.__name__}.{name}: not a property of any schema it is read from; "
                    "remove it or mark it LOCAL_FIELDS"
                )
            elif required and name not in everywhere:
                problems.append(
                    f"{cls.__name__}.{name}: required in the record but optional in a schema "
                    "(give it a default)"
                )
            elif not required and name in everywhere:
                problems.append(
                    f"{cls.__name__}.{name}: every schema requires it but the record gives it a "
                    "default (make it required)"
                )
    return problems


def check_statuses(spec: Spec) -> list[str]:
    """Every documented refusal status raises a class of its own (4XX/5XX: their class)."""
    problems = []
    for (method, path), operation in documented(spec).items():
        for status in operation.get("responses", {}):
            text = str(status).upper()
            if text.startswith("2"):
                continue
            if text == "4XX":
                ok = error_class(499) is ClientError
            elif text == "5XX":
                ok = error_class(599) is ServerError
            else:
                ok = int(text) in STATUS_ERRORS and error_class(int(text)) is not SandApiError
            if not ok:
                problems.append(
                    f"{method} {path}: status {text} has no exception class "
                    "(add one to sand.client.errors.STATUS_ERRORS)"
                )
    return problems


def check_enums(spec: Spec) -> list[str]:
    """The values the document enumerates are the code's: execution statuses
    (``sand.contracts.ExecutionStatus``) and history event types
    (``sand_workflows.history.TYPES``), where the document has them."""
    statuses = sorted(s.value for s in ExecutionStatus)
    schemas = spec.get("components", {}).get("schemas", {})
    expected = {
        ("ExecutionDocument", "status"): statuses,
        ("ExecutionSummary", "status"): statuses,
        ("HistoryEvent", "type"): sorted(HISTORY_TYPES),
    }
    problems = []
    for (schema, prop), code in expected.items():
        listed = schemas.get(schema, {}).get("properties", {}).get(prop, {}).get("enum")
        if listed is not None and sorted(listed) != code:
            problems.append(f"{schema}.{prop}: {_enum_diff(listed, code)}")
    listing = documented(spec).get(("GET", "/v1/executions"))
    for parameter in listing["parameters"] if listing else []:
        parameter = resolve(spec, parameter)
        listed = parameter.get("schema", {}).get("enum")
        if parameter["name"] == "status" and listed is not None and sorted(listed) != statuses:
            problems.append(f"GET /v1/executions status: {_enum_diff(listed, statuses)}")
    return problems


def _enum_diff(listed: list[str], code: list[str]) -> str:
    missing, extra = sorted(set(code) - set(listed)), sorted(set(listed) - set(code))
    return "; ".join(
        part
        for part in (
            f"the document lacks {missing}" if missing else "",
            f"the code never produces {extra}" if extra else "",
        )
        if part
    )


# -- the tests ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spec() -> Spec:
    return load_spec()


def test_everyOperation_hasAClientMethod(spec: Spec) -> None:
    """Each operation of the document is served by a method, and no row names a ghost."""
    assert unexpected("operations", check_operations(spec)) == []


def test_everyParameter_reachesAKeyword(spec: Spec) -> None:
    """Each path/query parameter and body property of an operation is a keyword of its method."""
    assert unexpected("parameters", check_parameters(spec)) == []


def test_everySuccessSchema_matchesItsRecord(spec: Spec) -> None:
    """Properties are fields; required properties are fields without a default."""
    assert unexpected("models", check_models(spec)) == []


def test_enumeratedValues_areTheCodes(spec: Spec) -> None:
    """Execution statuses and history event types are the ones the code produces."""
    assert unexpected("enums", check_enums(spec)) == []


def test_everyDocumentedStatus_hasAnExceptionClass(spec: Spec) -> None:
    """A refusal the document lists raises its own class (NotFound, Conflict, ...)."""
    assert unexpected("statuses", check_statuses(spec)) == []


# -- the checks catch drift ---------------------------------------------------------------------
# Each test changes a copy of the document and expects exactly the lines the change adds to
# what the check reports (so they hold for any copy of the document the client matches).

CHECKS = {
    "operations": check_operations,
    "parameters": check_parameters,
    "models": check_models,
    "statuses": check_statuses,
    "enums": check_enums,
}


def new_problems(check: str, spec: Spec, change: Any) -> list[str]:
    changed = copy.deepcopy(spec)
    change(changed)
    before = set(CHECKS[check](spec))
    return sorted(set(CHECKS[check](changed)) - before)


def test_aNewRoute_withoutAMethod_isNamed(spec: Spec) -> None:
    """A route added to the document without a client method fails the check, naming it."""

    def add(s: Spec) -> None:
        s["paths"]["/v1/apps/{app}/versions"] = {"get": {"responses": {"200": {}}}}

    assert new_problems("operations", spec, add) == [
        "GET /v1/apps/{app}/versions: documented in openapi.yaml but no SandClient method "
        "serves it (add one and a row to sand.client.operations.OPERATIONS)"
    ]


def test_aNewProperty_withoutAField_isNamed(spec: Spec) -> None:
    """A property added to a response schema without its field fails, naming both, at every
    answer that carries the schema."""

    def add(s: Spec) -> None:
        s["components"]["schemas"]["ExecutionDocument"]["properties"]["host"] = {"type": "string"}

    problems = new_problems("models", spec, add)
    assert "GET /v1/executions/{id} 200: property 'host' has no field in Execution (add it)" in (
        problems
    )
    assert all("property 'host' has no field in Execution (add it)" in p for p in problems)


def test_aNewRequiredProperty_ofANestedRecord_isNamed(spec: Spec) -> None:
    """Nested records (an app's limits) are checked too, and required-ness with them."""

    def add(s: Spec) -> None:
        limits = s["components"]["schemas"]["AppMetadata"]["properties"]["limits"]
        limits["properties"]["cpus"] = {"type": "number"}
        limits["required"] = ["timeout_s"]

    assert new_problems("models", spec, add) == [
        "AppLimits.timeout_s: every schema requires it but the record gives it a default "
        "(make it required)",
        "GET /v1/apps 200.limits: property 'cpus' has no field in AppLimits (add it)",
        "GET /v1/apps/{app} 200.limits: property 'cpus' has no field in AppLimits (add it)",
    ]


def test_aNewParameter_withoutAKeyword_isNamed(spec: Spec) -> None:
    """A query parameter added to an operation without a keyword fails, naming both."""

    def add(s: Spec) -> None:
        s["paths"]["/v1/apps/{app}/logs"]["get"]["parameters"].append(
            {"name": "since", "in": "query", "schema": {"type": "string"}}
        )

    assert new_problems("parameters", spec, add) == [
        "GET /v1/apps/{app}/logs: parameter 'since' is documented but logs() does not take "
        "it (add a keyword and map it in OPERATIONS)"
    ]


def test_aNewStatus_withoutAClass_isNamed(spec: Spec) -> None:
    """A status added to an operation without an exception class fails, naming it."""

    def add(s: Spec) -> None:
        # 429 has a class now (Busy); 422 has none
        s["paths"]["/v1/whoami"]["get"]["responses"]["422"] = {"description": "unprocessable"}

    assert new_problems("statuses", spec, add) == [
        "GET /v1/whoami: status 422 has no exception class "
        "(add one to sand.client.errors.STATUS_ERRORS)"
    ]


def test_aPendingEntry_theDocumentResolves_mustLeaveThePendingSet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once the document describes what was pending, the test asks to take it out."""
    pending = "GET /v1/pending: a row of OPERATIONS, but openapi.yaml does not describe it"
    monkeypatch.setitem(PENDING_IN_DOCUMENT, "operations", frozenset({pending}))
    assert unexpected("operations", []) == [
        f"resolved in openapi.yaml, remove from PENDING_IN_DOCUMENT['operations']: {p}"
        for p in sorted(PENDING_IN_DOCUMENT["operations"])
    ]
    assert unexpected("operations", [pending, "GET /x: new"])[0] == "GET /x: new"


def test_anAnswerOfAlternatives_isCheckedPerAlternative(spec: Spec) -> None:
    """``anyOf`` (a 202 that is either Accepted or a whole document) checks the record against
    each alternative: a property of either one without a field is named."""

    def alternatives_(s: Spec) -> None:
        accepted = s["paths"]["/v1/apps/{app}/invoke"]["post"]["responses"]["202"]
        accepted["content"]["application/json"]["schema"] = {
            "anyOf": [
                {"$ref": "#/components/schemas/Accepted"},
                {"$ref": "#/components/schemas/ExecutionDocument"},
            ]
        }

    def more(s: Spec) -> None:
        alternatives_(s)
        s["components"]["schemas"]["Accepted"]["properties"]["queued_ms"] = {"type": "integer"}

    assert new_problems("models", spec, more) == [
        "POST /v1/apps/{app}/invoke 202: property 'queued_ms' has no field in Execution (add it)"
    ]


def test_aStatusMissingFromTheDocument_isNamed(spec: Spec) -> None:
    """A status the code has and the document's summary lacks fails, naming both lists."""

    def narrow(s: Spec) -> None:
        s["components"]["schemas"]["ExecutionSummary"] = {
            "properties": {"status": {"enum": ["RUNNING", "SUCCEEDED", "FAILED", "DONE"]}}
        }

    assert new_problems("enums", spec, narrow) == [
        "ExecutionSummary.status: the document lacks ['ABORTED']; the code never produces ['DONE']"
    ]


def test_theTablesRecords_nameRealFields() -> None:
    """The table's models are dataclasses whose metadata names real fields (a typo there
    would silently widen the check)."""
    for row in OPERATIONS:
        if row.model is None:
            continue
        names = {f.name for f in dataclasses.fields(row.model)}
        for attribute in ("LOCAL_FIELDS", "FLATTENED"):
            assert set(getattr(row.model, attribute, ())) <= names, (row.model, attribute)
        open_field = getattr(row.model, "OPEN_FIELD", None)
        assert open_field is None or open_field in names
        assert isinstance(getattr(row.model, "from_json", None), types.MethodType)
        assert isinstance(row.params, Mapping)
