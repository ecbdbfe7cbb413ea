"""SAND workflows: the native format and the Amazon States Language, one step interpreter.

See ``workflows/README.md`` and docs/decisions/0002-workflow-engine-step-api.md.

The names below are imported on first use (decision 0025): a grain worker imports the
step interpreter (``sand_workflows.engine``) but never the loaders, their YAML parser and
their validation, which ``import sand_workflows.<anything>`` would otherwise load with this
package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import Problem, WorkflowError
    from .loader import load_workflow, load_workflow_text, validate_workflow
    from .model import Workflow

__all__ = [
    "Problem",
    "Workflow",
    "WorkflowError",
    "load_workflow",
    "load_workflow_text",
    "validate_workflow",
]

_HOMES = {
    "Problem": "errors",
    "WorkflowError": "errors",
    "load_workflow": "loader",
    "load_workflow_text": "loader",
    "validate_workflow": "loader",
    "Workflow": "model",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
