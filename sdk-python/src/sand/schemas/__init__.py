"""JSON Schemas (Draft 2020-12) of ``app.yaml`` and of the native workflow format.

They are for editors (completion and checking as you type, through a
``# yaml-language-server: $schema=...`` line) and for other tools. They describe
the shape of the files; the loaders (:func:`sand.app.load_app`,
``sand_workflows.load_workflow``) stay the authority: they check what a schema
cannot (files exist, names refer to grains, reachability) and give line numbers.
The unit tests keep the two in agreement.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

# schema name (what `sand schema NAME` takes) -> file in this package
SCHEMAS = {"app": "app.schema.json", "workflow": "workflow.schema.json"}


def schema_text(name: str) -> str:
    """The text of the schema ``name`` (a key of :data:`SCHEMAS`); KeyError otherwise."""
    return resources.files(__name__).joinpath(SCHEMAS[name]).read_text(encoding="utf-8")


def load_schema(name: str) -> dict[str, Any]:
    """The schema ``name`` as a JSON document."""
    document: dict[str, Any] = json.loads(schema_text(name))
    return document
