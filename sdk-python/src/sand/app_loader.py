"""Reading and checking an application directory into an :class:`~sand.app.AppSpec`.

:func:`sand.app.load_app` is the entry point; :class:`AppLoader` applies the rules of
``app.yaml`` (the format is in :mod:`sand.app`), of the grain files (parsed with
:mod:`ast`, never imported) and of the workflow files (``sand_workflows``), collecting
every problem before it raises one :class:`~sand.app.AppError`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sand import contracts
from sand.app import (
    APP_FILE,
    DEFAULT_WORKFLOW,
    DEPLOY_REQUEST,
    EVENTS_PER_INSTANCE,
    GRAIN_FILE,
    MAX_CPU_WEIGHT,
    WORKFLOW_SUFFIXES,
    AppError,
    AppProblem,
    AppSpec,
    GrainSpec,
    Limits,
    WorkflowSpec,
)
from sand.placement import Placement, check_placement, kind_of
from sand.triggers import AppFacts, Trigger, check_triggers

# Names end up in queue names, Kafka topics and Redis keys: the rules are contracts.
_NAME_RULES = {"grains": contracts.GRAIN_NAME, "workflows": contracts.WORKFLOW_NAME}
_TOP_LEVEL_FIELDS = (
    "name",
    "grains",
    "workflows",
    "requirements",
    "limits",
    "history",
    "placement",
    "triggers",
)
_GRAIN_FIELDS = (GRAIN_FILE, EVENTS_PER_INSTANCE)


class AppLoader:
    """The checks of one application directory; :meth:`load` runs them all. Blocking
    (reads files); single use."""

    def __init__(self, root: Path, cluster_hosts: Sequence[str] | None, placement: Any) -> None:
        self.root = root
        self.cluster_hosts = cluster_hosts
        self.placement_override = placement
        # Shown in messages as the user wrote it, e.g. "examples/hello/app.yaml".
        self.app_file = str(root / APP_FILE)
        self.problems: list[AppProblem] = []

    def problem(self, field_name: str | None, rule: str, **where: Any) -> None:
        self.problems.append(AppProblem(self.app_file, field_name, rule, **where))

    def fail(self) -> AppError:
        return AppError(self.problems)

    def load(self) -> AppSpec:
        # The YAML parser and the workflow loaders are imported where used, not with this
        # module: what only uses AppSpec (a grain worker) does not load them (decision 0025).
        doc = self.read_app_file()
        if doc is None:
            raise self.fail()
        for key in doc:
            if key not in _TOP_LEVEL_FIELDS:
                allowed = ", ".join(_TOP_LEVEL_FIELDS)
                self.problem(str(key), f"unknown field (allowed: {allowed})")
        name = self.check_name(doc.get("name"))
        grains = self.check_grains(doc.get("grains"))
        requirements = self.check_requirements(doc.get("requirements"))
        limits = self.check_limits(doc.get("limits"))
        # Workflows are checked against the grain names even when some grain files are
        # broken, so that one run reports every problem.
        grain_names = set(grains) | set(self.declared_names(doc.get("grains")))
        workflows = self.check_workflows(doc.get("workflows"), grain_names)
        placement = self.check_placement(doc, workflows)
        history = doc.get("history", True)
        if not isinstance(history, bool):
            self.problem("history", f"must be true or false, got {history!r}")
        triggers = self.check_triggers(doc.get("triggers"), doc.get("workflows"), limits, name)
        if self.problems:
            raise self.fail()
        assert name is not None
        return AppSpec(
            name=name,
            root=self.root.resolve(),
            grains=MappingProxyType(grains),
            workflows=MappingProxyType(workflows),
            requirements=requirements,
            limits=limits,
            default_workflow=_default_workflow(list(workflows)),
            placement=placement,
            history=history,
            triggers=triggers,
        )

    # -- app.yaml ------------------------------------------------------------------

    def read_app_file(self) -> dict[Any, Any] | None:
        if not self.root.is_dir():
            self.problems.append(
                AppProblem(str(self.root), None, "not a directory (an app is a directory)")
            )
            return None
        app_path = self.root / APP_FILE
        if not app_path.is_file():
            self.problem(None, "file does not exist (every app directory needs one)")
            return None
        try:
            text = app_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.problem(None, f"cannot be read: {exc}")
            return None
        import yaml
        from sand_workflows.parsing import load_yaml

        try:
            doc = load_yaml(text)  # refuses a key given twice, with its line
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            rule = f"invalid YAML: {exc.problem or exc.context}"
            if mark is not None:
                self.problem(None, rule, line=mark.line + 1, column=mark.column + 1)
            else:
                self.problem(None, rule)
            return None
        except yaml.YAMLError as exc:
            self.problem(None, f"invalid YAML: {exc}")
            return None
        if not isinstance(doc, dict):
            self.problem(None, f"must be a mapping of fields, got {kind_of(doc)}")
            return None
        return doc

    def check_name(self, value: Any) -> str | None:
        if value is None:
            self.problem("name", "is required")
        elif not isinstance(value, str):
            self.problem("name", f"must be a string, got {kind_of(value)}")
        elif not contracts.APP_NAME.fullmatch(value):
            self.problem("name", f"'{value}' must match {contracts.APP_NAME.pattern}")
        else:
            return value
        return None

    def check_entity_name(self, section: str, name: Any) -> bool:
        rule = _NAME_RULES[section]
        if not isinstance(name, str) or not rule.fullmatch(name):
            self.problem(f"{section}.{name}", f"name must match {rule.pattern}")
            return False
        return True

    def check_relative_file(self, field_name: str, value: Any) -> Path | None:
        """A path relative to the app directory that names an existing file inside it."""
        if not isinstance(value, str) or not value:
            self.problem(field_name, f"must be a file path, got {kind_of(value)}")
            return None
        rel = Path(value)
        if rel.is_absolute():
            self.problem(field_name, f"path {value} must be relative to the app directory")
            return None
        path = self.root / rel
        try:
            path.resolve().relative_to(self.root.resolve())
        except ValueError:
            self.problem(field_name, f"path {value} must stay inside the app directory")
            return None
        if not path.exists():
            self.problem(field_name, f"file {value} does not exist")
            return None
        if not path.is_file():
            self.problem(field_name, f"{value} is not a file")
            return None
        return path.resolve()

    # -- grains --------------------------------------------------------------------

    @staticmethod
    def declared_names(section: Any) -> list[str]:
        """The names a section (grains, workflows) declares, valid or not, in order."""
        if not isinstance(section, dict):
            return []
        return [k for k in section if isinstance(k, str)]

    def check_grains(self, section: Any) -> dict[str, GrainSpec]:
        grains: dict[str, GrainSpec] = {}
        if section is None:
            self.problem("grains", "is required (a mapping: grain name -> Python file)")
            return grains
        if not isinstance(section, dict) or not section:
            self.problem(
                "grains", f"must be a non-empty mapping of name -> file, got {kind_of(section)}"
            )
            return grains
        for name, value in section.items():
            if not self.check_entity_name("grains", name):
                continue
            field_name = f"grains.{name}"
            events_per_instance = 1
            if isinstance(value, dict):
                options = self.check_grain_options(field_name, value)
                if options is None:
                    continue
                value, events_per_instance = options
                field_name = f"{field_name}.{GRAIN_FILE}"
            path = self.check_relative_file(field_name, value)
            if path is None:
                continue
            if path.suffix != ".py":
                self.problem(field_name, f"file {value} must be a Python file (.py)")
                continue
            if self.check_grain_source(path, value):
                grains[name] = GrainSpec(
                    name=name, path=path, events_per_instance=events_per_instance
                )
        return grains

    def check_grain_options(
        self, field_name: str, options: dict[Any, Any]
    ) -> tuple[Any, int] | None:
        """The long form of a grain: its file and its options, or None (problems noted)."""
        ok = True
        for key in options:
            if key not in _GRAIN_FIELDS:
                allowed = ", ".join(_GRAIN_FIELDS)
                self.problem(f"{field_name}.{key}", f"unknown grain option (allowed: {allowed})")
                ok = False
        if GRAIN_FILE not in options:
            self.problem(f"{field_name}.{GRAIN_FILE}", "is required (the grain's Python file)")
            ok = False
        events = options.get(EVENTS_PER_INSTANCE, 1)
        if not isinstance(events, int) or isinstance(events, bool) or events < 1:
            self.problem(
                f"{field_name}.{EVENTS_PER_INSTANCE}",
                f"must be an integer >= 1 (1: a fresh process per event), got {events!r}",
            )
            ok = False
        return (options[GRAIN_FILE], events) if ok else None

    def check_grain_source(self, path: Path, shown: str) -> bool:
        """The grain file parses and defines a top-level callable ``handle``."""
        file_label = str(self.root / shown)
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.problems.append(AppProblem(file_label, None, f"cannot be read: {exc}"))
            return False
        try:
            tree = ast.parse(source, filename=file_label)
        except SyntaxError as exc:
            self.problems.append(
                AppProblem(
                    file_label,
                    None,
                    f"invalid Python: {exc.msg}",
                    line=exc.lineno,
                    column=exc.offset,
                )
            )
            return False
        rule = _handle_problem(tree)
        if rule is not None:
            line = rule[1]
            self.problems.append(AppProblem(file_label, "handle", rule[0], line=line))
            return False
        return True

    # -- workflows -----------------------------------------------------------------

    def check_workflows(self, section: Any, grain_names: set[str]) -> dict[str, WorkflowSpec]:
        workflows: dict[str, WorkflowSpec] = {}
        if section is None:
            self.problem("workflows", "is required (a mapping: workflow name -> definition file)")
            return workflows
        if not isinstance(section, dict) or not section:
            self.problem(
                "workflows",
                f"must be a non-empty mapping of name -> file, got {kind_of(section)}",
            )
            return workflows
        for name, value in section.items():
            if not self.check_entity_name("workflows", name):
                continue
            field_name = f"workflows.{name}"
            path = self.check_relative_file(field_name, value)
            if path is None:
                continue
            if path.suffix not in WORKFLOW_SUFFIXES:
                self.problem(field_name, f"file {value} must end in .json, .yaml or .yml")
                continue
            from sand_workflows import WorkflowError, load_workflow

            try:
                definition = load_workflow(path, grains=frozenset(grain_names))
            except UnicodeDecodeError as exc:
                self.problem(field_name, f"file {value} is not UTF-8 text: {exc.reason}")
                continue
            except WorkflowError as exc:
                file_label = str(self.root / value)
                for problem in exc.problems:
                    self.problems.append(_workflow_problem(file_label, path.name, problem))
                continue
            workflows[name] = WorkflowSpec(name=name, path=path, definition=definition)
        return workflows

    # -- placement -----------------------------------------------------------------

    def check_placement(self, doc: dict[Any, Any], workflows: dict[str, WorkflowSpec]) -> Placement:
        section = doc.get("grains")
        # manifest order: the entry grain of a workflow without Task is the first grain
        grains = [g for g in section if isinstance(g, str)] if isinstance(section, dict) else []
        definitions = {name: spec.definition for name, spec in workflows.items()}
        if self.placement_override is not None:

            def report(field_name: str, rule: str) -> None:
                self.problems.append(AppProblem(DEPLOY_REQUEST, field_name, rule))

            value = self.placement_override
        else:
            report = self.problem
            value = doc.get("placement")
        return check_placement(value, grains, definitions, self.cluster_hosts, report)

    # -- triggers ------------------------------------------------------------------

    def check_triggers(
        self, section: Any, workflows: Any, limits: Limits, name: str | None
    ) -> tuple[Trigger, ...]:
        """Triggers are checked against the workflows the manifest declares, loaded or not:
        a workflow file with problems is reported once, not again by each trigger."""
        declared = [
            name
            for name in self.declared_names(workflows)
            if contracts.WORKFLOW_NAME.fullmatch(name)
        ]
        facts = AppFacts(tuple(declared), _default_workflow(declared), limits.payload_bytes, name)
        return check_triggers(section, facts, self.problem)

    # -- requirements and limits ---------------------------------------------------

    def check_requirements(self, value: Any) -> Path | None:
        if value is None:
            return None
        return self.check_relative_file("requirements", value)

    def check_limits(self, section: Any) -> Limits:
        defaults = Limits()
        if section is None:
            return defaults
        if not isinstance(section, dict):
            self.problem("limits", f"must be a mapping, got {kind_of(section)}")
            return defaults
        values: dict[str, Any] = {}
        for key, value in section.items():
            field_name = f"limits.{key}"
            if key not in Limits.__dataclass_fields__:
                allowed = ", ".join(Limits.__dataclass_fields__)
                self.problem(field_name, f"unknown limit (allowed: {allowed})")
                continue
            # bool is an int in Python; "timeout_s: yes" is a mistake, not 1 second.
            is_number = isinstance(value, int | float) and not isinstance(value, bool)
            if key == "timeout_s":
                if not is_number or value <= 0:
                    self.problem(field_name, f"must be a number > 0, got {value!r}")
                    continue
                values[key] = float(value)
            elif key == "cpu_weight":
                if not is_number or not isinstance(value, int) or not 1 <= value <= MAX_CPU_WEIGHT:
                    self.problem(
                        field_name, f"must be an integer from 1 to {MAX_CPU_WEIGHT}, got {value!r}"
                    )
                    continue
                values[key] = value
            else:
                if not is_number or not isinstance(value, int) or value <= 0:
                    self.problem(field_name, f"must be an integer > 0, got {value!r}")
                    continue
                values[key] = value
        return Limits(**values)


def _default_workflow(names: Sequence[str]) -> str | None:
    """The workflow an execution runs when none is named: "main" if present, else the only
    one; None when neither applies."""
    if DEFAULT_WORKFLOW in names:
        return DEFAULT_WORKFLOW
    return names[0] if len(names) == 1 else None


def _handle_problem(tree: ast.Module) -> tuple[str, int | None] | None:
    """Why the module does not define a usable top-level ``handle``, or None if it does.

    The last top-level binding of ``handle`` wins, as it would at import time.
    """
    binding: ast.stmt | None = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == "handle":
                binding = node
        elif isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == "handle" for t in node.targets):
                binding = node
        elif isinstance(node, ast.AnnAssign):
            if isinstance(node.target, ast.Name) and node.target.id == "handle":
                binding = node
        elif isinstance(node, ast.Import | ast.ImportFrom) and any(
            (alias.asname or alias.name) == "handle" for alias in node.names
        ):
            binding = node
    if binding is None:
        return ("must define a top-level function handle(event, context)", None)
    if isinstance(binding, ast.AsyncFunctionDef):
        return ("must be a plain function, not async def", binding.lineno)
    if isinstance(binding, ast.FunctionDef):
        args = binding.args
        positional = len(args.posonlyargs) + len(args.args)
        if positional < 2 and args.vararg is None:
            return (
                f"must accept two arguments (event, context), it accepts {positional}",
                binding.lineno,
            )
        return None
    if isinstance(binding, ast.Assign | ast.AnnAssign):
        value = binding.value
        if isinstance(
            value,
            ast.Constant | ast.List | ast.Dict | ast.Set | ast.Tuple | ast.JoinedStr | ast.BinOp,
        ):
            return ("must be callable, it is assigned a plain value", binding.lineno)
    # A class, an import or an assignment of something that may be callable: only
    # importing could tell, and the loader must not run user code.
    return None


def _workflow_problem(file_label: str, source: str, problem: Any) -> AppProblem:
    """A sand_workflows Problem (located in ``source``, the file's base name) as an AppProblem.

    Its location is ``source``, ``source: <state or grain>`` or ``source:<line>:<col>``.
    """
    location, message = str(problem.location), str(problem.message)
    if location.startswith(source):
        rest = location[len(source) :]
        if rest.startswith(": "):
            return AppProblem(file_label, rest[2:], message)
        match = re.fullmatch(r":(\d+)(?::(\d+))?", rest)
        if match:
            column = int(match[2]) if match[2] else None
            return AppProblem(file_label, None, message, line=int(match[1]), column=column)
        if not rest:
            return AppProblem(file_label, None, message)
    return AppProblem(file_label, location, message)
