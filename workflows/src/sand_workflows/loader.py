"""Reading definitions: parse JSON/YAML, pick the format, validate and compile.

Validation never stops at the first problem: every rule broken is collected as a
``Problem`` whose location names the file and the state or grain. The formats are
compiled by ``asl_loader`` (Amazon States Language) and ``native_loader`` (SAND native).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from pathlib import Path as FsPath
from typing import Any

import yaml

from .asl_loader import AslCompiler
from .errors import Problem, WorkflowError
from .model import Workflow
from .native_loader import NativeCompiler
from .parsing import load_json, load_yaml
from .validation import Compiler


def parse_text(text: str, source: str) -> tuple[Any, list[Problem]]:
    """Parse JSON (``*.json``) or YAML; a syntax error, or a key given twice in one
    mapping, becomes one Problem with line and column."""
    if source.lower().endswith(".json"):
        try:
            return load_json(text), []
        except json.JSONDecodeError as exc:
            return None, [
                Problem(f"{source}:{exc.lineno}:{exc.colno}", f"malformed JSON: {exc.msg}")
            ]
    try:
        return load_yaml(text), []
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        return None, [Problem(where, f"malformed YAML: {exc.problem or exc.context}")]
    except yaml.YAMLError as exc:
        return None, [Problem(source, f"malformed YAML: {exc}")]


def compile_document(
    doc: Any, source: str, grains: Collection[str] | None = None, name: str | None = None
) -> tuple[Workflow | None, list[Problem]]:
    """Validate and compile a parsed definition; the workflow is None when problems exist."""
    wf_name = name or os.path.splitext(os.path.basename(source))[0] or "workflow"
    if not isinstance(doc, dict):
        return None, [Problem(source, "a workflow definition must be an object")]
    if "StartAt" in doc or "States" in doc:
        compiler: Compiler = AslCompiler(source, grains)
    else:
        compiler = NativeCompiler(source, grains)
    wf = compiler.compile(doc, wf_name)
    problems = compiler.problems
    return (None if problems else wf), problems


def load_workflow_text(
    text: str,
    source: str = "workflow.yaml",
    grains: Collection[str] | None = None,
    name: str | None = None,
) -> Workflow:
    """Parse, validate and compile a definition; raises WorkflowError listing every problem.

    ``grains``, when given, names the grains the application defines: a Task Resource or a
    native grain outside it is a problem.
    """
    doc, problems = parse_text(text, source)
    if problems:
        raise WorkflowError(problems)
    wf, problems = compile_document(doc, source, grains, name)
    if problems or wf is None:
        raise WorkflowError(problems)
    return wf


def load_workflow(path: str | os.PathLike[str], grains: Collection[str] | None = None) -> Workflow:
    """Read a definition file (JSON or YAML, native or ASL); raises WorkflowError."""
    p = FsPath(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkflowError([Problem(p.name, f"cannot read the file: {exc.strerror}")]) from None
    return load_workflow_text(text, source=p.name, grains=grains)


def validate_workflow(
    path: str | os.PathLike[str], grains: Collection[str] | None = None
) -> list[Problem]:
    """Every problem of a definition file; ``[]`` when it is valid."""
    try:
        load_workflow(path, grains)
    except WorkflowError as exc:
        return exc.problems
    return []
