"""The Amazon States Language: the structure of a machine (scopes, states, transitions).

Field values (Paths, Payload Templates, Retry, Catch) are compiled by ``asl_fields``;
which fields each state type may have is ``asl_schema``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields as dataclass_fields
from typing import Any

from . import model
from .asl_fields import AslFieldCompiler
from .asl_schema import (
    ALLOWED_FIELDS,
    ASL_TOP_FIELDS,
    ASSIGNING_TYPES,
    CALLBACK_SUFFIX,
    FLOW_FIELDS,
    JSONATA_FIELDS,
    QUERY_LANGUAGES,
    UNSUPPORTED_FIELDS,
    misplaced,
)
from .choice import compile_rule, parse_timestamp
from .intrinsics import check_intrinsic
from .jsonata_lang import is_expression
from .model import ChoiceRule, State, Workflow, WorkflowKind
from .suggest import did_you_mean
from .validation import is_int, reachable_from, report_endless
from .variable_checks import check_references

# Adds the fields of one state type to the constructor arguments: (spec, loc, names, fields).
_TypeFields = Callable[[dict[str, Any], str, set[str], dict[str, Any]], None]


class AslCompiler(AslFieldCompiler):
    """Compiles an ASL machine; nested branches and Map processors share its ``states``."""

    def compile(self, doc: dict[str, Any], name: str) -> Workflow | None:
        self.states: dict[str, State] = {}
        self.seen_names: dict[str, str] = {}
        self.machine_jsonata = False
        # ASL "Type" -> the record it compiles to, and what adds that type's own fields.
        self.state_types: dict[str, tuple[type[State], _TypeFields | None]] = {
            "Task": (model.TaskState, self.task_fields),
            "Pass": (model.PassState, self.pass_fields),
            "Choice": (model.ChoiceState, self.choice_fields),
            "Wait": (model.WaitState, self.wait_fields),
            "Succeed": (model.SucceedState, None),
            "Fail": (model.FailState, self.fail_fields),
            "Parallel": (model.ParallelState, self.parallel_fields),
            "Map": (model.MapState, self.map_fields),
        }
        for key in doc:
            if key == "TimeoutSeconds":
                self.problem(
                    "TimeoutSeconds", "a machine-wide TimeoutSeconds is not supported by SAND"
                )
            elif key == "QueryLanguage":
                if doc[key] not in QUERY_LANGUAGES:
                    self.problem(
                        "QueryLanguage",
                        f"must be one of {', '.join(QUERY_LANGUAGES)}, got {doc[key]!r}",
                    )
                self.machine_jsonata = doc[key] == "JSONata"
            elif key not in ASL_TOP_FIELDS:
                self.problem("", f"unknown top-level field '{key}'")
        if "Version" in doc and doc["Version"] != "1.0":
            self.problem("Version", f"only version '1.0' is supported, got {doc['Version']!r}")
        start = self.scope(doc, "")
        if start is None:
            return None
        if not self.problems:
            check_references(doc, self.machine_jsonata, self.problem)
        return Workflow(self.source, name, WorkflowKind.ASL, start, self.states, definition=doc)

    # A scope is the machine itself, a Parallel branch or a Map processor.
    def scope(self, doc: Any, prefix: str) -> str | None:
        where = prefix.rstrip(".")
        if not isinstance(doc, dict):
            self.problem(where, "must be an object with 'StartAt' and 'States'")
            return None
        states = doc.get("States")
        start = doc.get("StartAt")
        if not isinstance(states, dict) or not states:
            self.problem(
                where + ("." if where else "") + "States", "'States' must be a non-empty object"
            )
            states = {}
        if not isinstance(start, str):
            self.problem(
                where + ("." if where else "") + "StartAt",
                "'StartAt' must be a string naming a state",
            )
        elif states and start not in states:
            self.problem(
                where + ("." if where else "") + "StartAt",
                f"StartAt '{start}' names no state" + did_you_mean(start, states),
            )
        if prefix:
            for key in doc:
                if key not in {"StartAt", "States", "Comment", "ProcessorConfig"}:
                    self.problem(where, f"unknown field '{key}'")
        names = set(states)
        outer, self.dangling = self.dangling, False
        edges: dict[str, list[str]] = {}
        terminal: set[str] = set()
        for state_name, spec in states.items():
            loc = f"{prefix}States.{state_name}"
            if not isinstance(state_name, str) or not state_name:
                self.problem(loc, "a state name must be a non-empty string")
                continue
            if len(state_name) > 80:
                self.problem(
                    loc, f"a state name must be at most 80 characters, got {len(state_name)}"
                )
            if state_name in self.seen_names:
                self.problem(
                    loc,
                    f"state name '{state_name}' is already used at {self.seen_names[state_name]};"
                    " names must be unique across the machine",
                )
                continue
            self.seen_names[state_name] = loc
            state = self.state(state_name, spec, loc, names)
            if state is None:
                continue
            self.states[state_name] = state
            edges[state_name] = [t for t in state.targets() if t in names]
            if state.terminal:
                terminal.add(state_name)
        broken, self.dangling = self.dangling, outer
        if isinstance(start, str) and start in names and not broken:
            self.graph_checks(start, edges, terminal, prefix)
        return start if isinstance(start, str) and start in states else None

    def graph_checks(
        self, start: str, edges: dict[str, list[str]], terminal: set[str], prefix: str
    ) -> None:
        reachable = reachable_from(start, edges)
        for state_name in edges:
            if state_name not in reachable:
                self.problem(
                    f"{prefix}States.{state_name}", "unreachable: no transition leads to this state"
                )
        report_endless(edges, terminal, reachable, lambda n: f"{prefix}States.{n}", self.problem)

    def state(self, name: str, spec: Any, loc: str, names: set[str]) -> State | None:
        if not isinstance(spec, dict):
            self.problem(loc, "a state must be an object")
            return None
        typ = spec.get("Type")
        if not isinstance(typ, str) or typ not in self.state_types:
            self.problem(
                loc + ".Type",
                f"unknown state Type {typ!r}; expected one of {', '.join(self.state_types)}"
                if "Type" in spec
                else "a state must have a 'Type'",
            )
            return None
        jsonata = self.query_language(spec, loc)
        allowed = JSONATA_FIELDS[typ] if jsonata else ALLOWED_FIELDS[typ]
        for key in spec:
            if key in UNSUPPORTED_FIELDS.get(typ, ()):
                self.problem(f"{loc}.{key}", f"'{key}' is not supported by SAND")
            elif key not in allowed:
                self.problem(f"{loc}.{key}", misplaced(key, typ, jsonata))
        # The class decides which common fields apply: e.g. Fail has no InputPath, and a
        # Map's "Parameters" is its ItemSelector (set by map_fields), not MapState.parameters.
        cls, type_fields = self.state_types[typ]
        attrs = {f.name for f in dataclass_fields(cls)}
        fields: dict[str, Any] = {"name": name, "location": loc, "jsonata": jsonata}
        if issubclass(cls, model.FlowState):
            self.flow(spec, loc, names, fields)
        if "Assign" in spec and typ in ASSIGNING_TYPES:
            fields["assign"] = self.assign(spec["Assign"], f"{loc}.Assign", jsonata)
        if jsonata:
            for key, attr in (("Output", "output"), ("Arguments", "arguments")):
                if key in spec and (attr == "output" or attr in attrs):
                    fields[attr] = self.jsonata_value(spec[key], f"{loc}.{key}")
            if issubclass(cls, model.RecoverableState):
                fields["retry"] = self.retriers(spec.get("Retry"), f"{loc}.Retry")
                fields["catch"] = self.catchers(spec.get("Catch"), f"{loc}.Catch", names, True)
            if type_fields is not None:
                type_fields(spec, loc, names, fields)
            return cls(**fields)
        if issubclass(cls, model.FilterState):
            for key, attr in (("InputPath", "input_path"), ("OutputPath", "output_path")):
                if key in spec:
                    fields[attr] = self.path_or_null(spec, key, loc)
        if "ResultPath" in spec and "result_path" in attrs:
            fields["result_path"] = self.result_path(spec["ResultPath"], f"{loc}.ResultPath")
        for key, attr in (("Parameters", "parameters"), ("ResultSelector", "result_selector")):
            if key in spec and attr in attrs:
                fields[attr] = self.template(spec[key], f"{loc}.{key}")
        if issubclass(cls, model.RecoverableState):
            fields["retry"] = self.retriers(spec.get("Retry"), f"{loc}.Retry")
            fields["catch"] = self.catchers(spec.get("Catch"), f"{loc}.Catch", names)
        if type_fields is not None:
            type_fields(spec, loc, names, fields)
        return cls(**fields)

    def query_language(self, spec: dict[str, Any], loc: str) -> bool:
        """Whether the state uses JSONata (its QueryLanguage, else the machine's)."""
        if "QueryLanguage" not in spec:
            return self.machine_jsonata
        value = spec["QueryLanguage"]
        if value not in QUERY_LANGUAGES:
            self.problem(
                f"{loc}.QueryLanguage",
                f"must be one of {', '.join(QUERY_LANGUAGES)}, got {value!r}",
            )
            return self.machine_jsonata
        if value == "JSONPath" and self.machine_jsonata:
            self.problem(
                f"{loc}.QueryLanguage",
                "a state of a JSONata machine cannot use JSONPath (a JSONPath machine may have"
                " JSONata states, not the reverse)",
            )
        return bool(value == "JSONata")

    def flow(self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]) -> None:
        has_next = "Next" in spec
        end = spec.get("End")
        if "End" in spec and not isinstance(end, bool):
            self.problem(f"{loc}.End", f"End must be true or false, got {end!r}")
        if has_next and end is True:
            self.problem(loc, "a state must not have both 'Next' and 'End': true")
        elif not has_next and end is not True:
            self.problem(loc, "a state must have 'Next' or 'End': true")
        if has_next:
            target = spec["Next"]
            if not isinstance(target, str):
                self.problem(f"{loc}.Next", f"Next must be a state name, got {target!r}")
            elif target not in names:
                self.no_state(f"{loc}.Next", "Next", target, names)
            else:
                fields["next"] = target
        fields["end"] = end is True

    def task_fields(
        self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]
    ) -> None:
        resource = spec.get("Resource")
        if isinstance(resource, str) and resource.endswith(CALLBACK_SUFFIX):
            # the integration pattern of Step Functions' callbacks (decision 0033)
            resource = resource.removesuffix(CALLBACK_SUFFIX)
            fields["callback"] = True
        if not isinstance(resource, str) or not resource:
            self.problem(loc, "a Task state must have 'Resource' naming a grain")
        elif self.grains is not None and resource not in self.grains:
            known = ", ".join(sorted(self.grains)) or "none"
            suffix = resource.rpartition(".")[2]
            if "." in resource and suffix in ("sync", "sync:2"):
                self.problem(
                    f"{loc}.Resource",
                    f"Resource '{spec['Resource']}': the '.{suffix}' integration pattern is not"
                    f" supported; a grain runs as a request-response task, or waits for a"
                    f" callback with '{CALLBACK_SUFFIX}'",
                )
            else:
                self.problem(
                    f"{loc}.Resource",
                    f"Resource '{resource}' names no grain of the app (grains: {known})"
                    + did_you_mean(resource, self.grains),
                )
        fields["resource"] = resource
        fields["timeout_s"] = 60.0  # spec "Task State": the default TimeoutSeconds is 60
        if fields["jsonata"]:
            for key, attr in (("TimeoutSeconds", "timeout"), ("HeartbeatSeconds", "heartbeat")):
                if is_expression(spec.get(key)):
                    fields[f"{attr}_template"] = self.jsonata_value(spec[key], f"{loc}.{key}")
                    spec = {k: v for k, v in spec.items() if k != key}
        self.positive_or_path(spec, "TimeoutSeconds", loc, fields, "timeout")
        if "timeout" in fields:
            fields["timeout_s"] = fields.pop("timeout")
        if "timeout_path" in fields or "timeout_template" in fields:
            fields["timeout_s"] = None
        heartbeat: dict[str, Any] = {}
        self.positive_or_path(spec, "HeartbeatSeconds", loc, heartbeat, "heartbeat")
        hb = heartbeat.get("heartbeat")
        if hb is not None and fields["timeout_s"] is not None and hb >= fields["timeout_s"]:
            self.problem(f"{loc}.HeartbeatSeconds", "must be smaller than TimeoutSeconds")
        if fields.get("callback"):
            fields["heartbeat_s"] = hb
            if "heartbeat_path" in heartbeat:
                fields["heartbeat_path"] = heartbeat["heartbeat_path"]
        else:
            # A heartbeat only means something to a task that waits for a callback.
            fields.pop("heartbeat_template", None)
        if "Credentials" in spec and not isinstance(spec["Credentials"], dict):
            self.problem(f"{loc}.Credentials", "must be an object")

    def pass_fields(
        self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]
    ) -> None:
        if "Result" in spec and not fields["jsonata"]:
            fields["has_result"] = True
            fields["result"] = spec["Result"]

    def choice_fields(
        self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]
    ) -> None:
        choices = spec.get("Choices")
        if not isinstance(choices, list) or not choices:
            self.problem(loc, "a Choice state must have 'Choices', a non-empty array")
            choices = []
        compiled: list[ChoiceRule] = []
        jsonata = fields["jsonata"]
        for i, rule_spec in enumerate(choices):
            where = f"{loc}.Choices[{i}]"
            if jsonata:
                choice = self.jsonata_rule(rule_spec, where, names)
                if choice is not None:
                    compiled.append(choice)
                continue
            found: list[tuple[str, str]] = []
            rule = compile_rule(rule_spec, where, found, top=True)
            for w, m in found:
                self.problem(w, m)
            target = rule_spec.get("Next") if isinstance(rule_spec, dict) else None
            if "Next" in (rule_spec if isinstance(rule_spec, dict) else {}) and (
                not isinstance(target, str) or target not in names
            ):
                self.no_state(f"{where}.Next", "Next", target, names)
                continue
            if rule is not None and isinstance(target, str):
                assert isinstance(rule_spec, dict)
                assign = None
                if "Assign" in rule_spec:
                    assign = self.assign(rule_spec["Assign"], f"{where}.Assign", False)
                compiled.append(ChoiceRule(target, rule=rule, assign=assign))
        fields["choices"] = tuple(compiled)
        if "Default" in spec:
            default = spec["Default"]
            if not isinstance(default, str) or default not in names:
                self.no_state(f"{loc}.Default", "Default", default, names)
            else:
                fields["default"] = default

    def jsonata_rule(self, spec: Any, where: str, names: set[str]) -> ChoiceRule | None:
        """A Choice Rule of a JSONata state: Condition, Next, and maybe Assign and Output."""
        if not isinstance(spec, dict):
            self.problem(where, "a Choice Rule must be an object")
            return None
        for key in spec:
            if key not in {"Condition", "Next", "Assign", "Output", "Comment"}:
                hint = (
                    " (a JSONata Choice Rule tests a 'Condition' expression)"
                    if key in {"Variable", "And", "Or", "Not"}
                    else ""
                )
                self.problem(f"{where}.{key}", f"unknown field '{key}' in a Choice Rule{hint}")
        condition = spec.get("Condition")
        target = spec.get("Next")
        if not isinstance(target, str) or target not in names:
            self.no_state(f"{where}.Next", "Next", target, names)
            return None
        if not (isinstance(condition, bool) or is_expression(condition)):
            self.problem(
                f"{where}.Condition",
                "a JSONata Choice Rule must have 'Condition': a {% %} expression (or true/false)",
            )
            return None
        return ChoiceRule(
            target,
            condition=self.jsonata_value(condition, f"{where}.Condition"),
            assign=self.assign(spec["Assign"], f"{where}.Assign", True)
            if "Assign" in spec
            else None,
            output=self.jsonata_value(spec["Output"], f"{where}.Output")
            if "Output" in spec
            else None,
        )

    def wait_fields(
        self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]
    ) -> None:
        if fields["jsonata"]:
            for key, attr in (("Seconds", "seconds_template"), ("Timestamp", "timestamp_template")):
                if is_expression(spec.get(key)):
                    fields[attr] = self.jsonata_value(spec[key], f"{loc}.{key}")
            spec = {k: v for k, v in spec.items() if not is_expression(v) or k in FLOW_FIELDS}
            if "seconds_template" in fields or "timestamp_template" in fields:
                others = [k for k in ("Seconds", "Timestamp") if k in spec]
                if others:
                    self.problem(loc, "a Wait state must have exactly one of Seconds, Timestamp")
                return
        given = [k for k in ("Seconds", "SecondsPath", "Timestamp", "TimestampPath") if k in spec]
        if len(given) != 1:
            self.problem(
                loc,
                "a Wait state must have exactly one of"
                " Seconds, SecondsPath, Timestamp, TimestampPath"
                + (f"; found {', '.join(given)}" if given else ""),
            )
        if "Seconds" in spec:
            v = spec["Seconds"]
            if not is_int(v) or v < 0:
                self.problem(f"{loc}.Seconds", f"must be a non-negative integer, got {v!r}")
            else:
                fields["seconds"] = float(v)
        if "Timestamp" in spec:
            if parse_timestamp(spec["Timestamp"]) is None:
                self.problem(
                    f"{loc}.Timestamp", f"must be an RFC 3339 timestamp, got {spec['Timestamp']!r}"
                )
            else:
                fields["timestamp"] = spec["Timestamp"]
        for key, attr in (("SecondsPath", "seconds_path"), ("TimestampPath", "timestamp_path")):
            if key in spec:
                fields[attr] = self.reference(spec[key], f"{loc}.{key}", key)

    def fail_fields(
        self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]
    ) -> None:
        if fields["jsonata"]:
            for key, attr in (("Error", "error"), ("Cause", "cause")):
                if is_expression(spec.get(key)):
                    fields[attr + "_template"] = self.jsonata_value(spec[key], f"{loc}.{key}")
                elif key in spec and not isinstance(spec[key], str):
                    self.problem(f"{loc}.{key}", f"must be a string, got {spec[key]!r}")
                elif key in spec:
                    fields[attr] = spec[key]
            return
        for key, attr in (("Error", "error"), ("Cause", "cause")):
            if key in spec and key + "Path" in spec:
                self.problem(loc, f"a Fail state must not have both '{key}' and '{key}Path'")
            if key in spec:
                if not isinstance(spec[key], str):
                    self.problem(f"{loc}.{key}", f"must be a string, got {spec[key]!r}")
                else:
                    fields[attr] = spec[key]
            if key + "Path" in spec:
                expr = spec[key + "Path"]
                where = f"{loc}.{key}Path"
                if isinstance(expr, str) and not expr.startswith("$"):
                    for message in check_intrinsic(expr):
                        self.problem(where, message)
                elif self.reference(expr, where, key + "Path") is None:
                    continue
                fields[attr + "_expr"] = expr

    def parallel_fields(
        self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]
    ) -> None:
        branches = spec.get("Branches")
        if not isinstance(branches, list) or not branches:
            self.problem(loc, "a Parallel state must have 'Branches', a non-empty array")
            return
        starts = []
        for i, branch in enumerate(branches):
            start = self.scope(branch, f"{loc}.Branches[{i}].")
            if start is not None:
                starts.append(start)
        fields["branches"] = tuple(starts)

    def map_fields(
        self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]
    ) -> None:
        if "ItemProcessor" in spec and "Iterator" in spec:
            self.problem(loc, "a Map state must not have both 'ItemProcessor' and 'Iterator'")
        key = "ItemProcessor" if "ItemProcessor" in spec else "Iterator"
        if key not in spec:
            self.problem(
                loc, "a Map state must have 'ItemProcessor' (or the deprecated 'Iterator')"
            )
        else:
            fields["processor"] = self.scope(spec[key], f"{loc}.{key}.")
        if fields["jsonata"]:
            self.jsonata_map_fields(spec, loc, fields)
            return
        if "ItemSelector" in spec and "Parameters" in spec:
            self.problem(loc, "a Map state must not have both 'ItemSelector' and 'Parameters'")
        for sel in ("ItemSelector", "Parameters"):
            if sel in spec:
                fields["item_selector"] = self.template(spec[sel], f"{loc}.{sel}")
        if "ItemsPath" in spec:
            p = self.reference(spec["ItemsPath"], f"{loc}.ItemsPath", "ItemsPath")
            if p is not None:
                fields["items_path"] = p
        if "MaxConcurrency" in spec and "MaxConcurrencyPath" in spec:
            self.problem(
                loc, "a Map state must not have both 'MaxConcurrency' and 'MaxConcurrencyPath'"
            )
        if "MaxConcurrency" in spec:
            v = spec["MaxConcurrency"]
            if not is_int(v) or v < 0:
                self.problem(f"{loc}.MaxConcurrency", f"must be a non-negative integer, got {v!r}")
            else:
                fields["max_concurrency"] = v
        if "MaxConcurrencyPath" in spec:
            fields["max_concurrency_path"] = self.reference(
                spec["MaxConcurrencyPath"], f"{loc}.MaxConcurrencyPath", "MaxConcurrencyPath"
            )

    def jsonata_map_fields(self, spec: dict[str, Any], loc: str, fields: dict[str, Any]) -> None:
        """Items, ItemSelector and MaxConcurrency of a JSONata Map."""
        if "Items" in spec:
            items = spec["Items"]
            if not (isinstance(items, list) or is_expression(items)):
                self.problem(f"{loc}.Items", "must be an array or a {% %} expression")
            else:
                fields["items"] = self.jsonata_value(items, f"{loc}.Items")
        if "ItemSelector" in spec:
            fields["item_template"] = self.jsonata_value(
                spec["ItemSelector"], f"{loc}.ItemSelector"
            )
        if "MaxConcurrency" in spec:
            v = spec["MaxConcurrency"]
            if is_expression(v):
                fields["max_concurrency_template"] = self.jsonata_value(v, f"{loc}.MaxConcurrency")
            elif not is_int(v) or v < 0:
                self.problem(f"{loc}.MaxConcurrency", f"must be a non-negative integer, got {v!r}")
            else:
                fields["max_concurrency"] = v
