"""SAND workflows: the native format and the Amazon States Language, one step interpreter.

See ``workflows/README.md`` and docs/decisions/0002-workflow-engine-step-api.md.
"""

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
