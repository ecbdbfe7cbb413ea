"""The application format: a directory with an ``app.yaml``.

An application names its grains (Python files defining ``handle(event, context)``)
and its workflows (definition files in JSON or YAML, native or ASL)::

    name: hello                      # [a-z0-9][a-z0-9-]{0,62} (sand.contracts.APP_NAME)
    grains:                          # grain name -> Python file defining handle(event, context)
      upper: grains/upper.py
      greet:                         # the long form, for per-grain options
        file: grains/greet.py
        events_per_instance: 100     #   opt-in reuse: one process serves up to 100 events
    workflows:                       # workflow name -> definition file (JSON or YAML)
      main: workflows/main.yaml
    requirements: requirements.txt   # optional: pip requirements installed into the sandbox
    limits:                          # optional; these are the defaults
      timeout_s: 30                  #   per grain invocation, unless the workflow says less
      memory_mb: 512                 #   per grain instance (the sandbox gets one per grain,
                                     #   plus one); default and maximum: the cluster's
      cpu_weight: 100                #   the sandbox's share of contended CPU (1-10000);
                                     #   default and maximum: the cluster's
      max_concurrency: 64            #   grain instances in flight per execution
      payload_kb: 256                #   largest JSON output of one grain invocation
    history: true                    # optional: record each execution's per-state history
                                     #   on the cluster (decision 0018); false records only
                                     #   the end of each execution
    placement:                       # optional (sand.placement); default: every grain on
      hosts: [host-1, host-2]        #   every host. The hosts that run the app
      grains:                        #   grain -> hosts (pinned); unlisted grains run on
        resize: [host-2]             #   every host of the app
    triggers:                        # optional (sand.triggers has every field): what
      nightly:                       #   starts executions without a client
        schedule: "cron(0 3 * * 1-5)"  #   or "rate(5 minutes)"; in timezone (default UTC)
        timezone: Europe/Paris
        input: {"report": "daily"}   #   the execution's input (default {})
      orders: {topic: orders}        #   one execution per record of this Kafka topic

``load_app`` checks everything it can without running user code (grain files are
parsed with :mod:`ast`, never imported) and raises one :class:`AppError` that lists
every problem, each naming the file, the field and the rule broken. It reads the
application directory and nothing else, so deploy can use it as it is.

This module is the application as a value (:class:`AppSpec` and its parts, the errors);
the rules that read and check a directory into one are :mod:`sand.app_loader`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sand import contracts
from sand.placement import Placement
from sand.triggers import Trigger

APP_FILE = "app.yaml"
# cgroup v2's cpu.weight range (contracts.thrift); the cluster's [sandbox] max_cpu_weight may
# allow less
MAX_CPU_WEIGHT = contracts.CONFIG_MAX_CPU_WEIGHT
WORKFLOW_SUFFIXES = (".json", ".yaml", ".yml")
DEFAULT_WORKFLOW = "main"
# Where problems of a placement given at deploy (not in app.yaml) are said to be.
DEPLOY_REQUEST = "deploy request"


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of every grain of an application (units in the names)."""

    timeout_s: float = 30.0
    # None: the cluster's default (``[sandbox] memory_mb``, ``cpu_weight``); the cluster
    # refuses a deploy above its maxima (decision 0022)
    memory_mb: int | None = None
    cpu_weight: int | None = None
    max_concurrency: int = 64
    payload_kb: int = 256

    @property
    def payload_bytes(self) -> int:
        return self.payload_kb * 1024


# The options of a grain's long form (``name: {file: ..., events_per_instance: N}``).
GRAIN_FILE = "file"
EVENTS_PER_INSTANCE = "events_per_instance"


@dataclass(frozen=True, slots=True)
class GrainSpec:
    """One grain: its name, the Python file (absolute) that defines ``handle``, and how
    many events one instance (process) of it may serve in sequence before it exits."""

    name: str
    path: Path
    # 1 (the default) is fork-per-event: every event gets a fresh process. More is the
    # opt-in reuse mode (decision 0010): later events see what earlier ones left behind
    # in the process (module globals, open files, memory), as on a warm Lambda instance.
    events_per_instance: int = 1

    @property
    def reuses_instances(self) -> bool:
        return self.events_per_instance > 1


@dataclass(frozen=True, slots=True)
class WorkflowSpec:
    """One workflow: its name, its definition file (absolute) and the loaded definition."""

    name: str
    path: Path
    # The object returned by sand_workflows.load_workflow (compiled graph).
    definition: Any = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AppSpec:
    """A validated application. Paths are absolute; mappings are read-only."""

    name: str
    root: Path
    grains: Mapping[str, GrainSpec]
    workflows: Mapping[str, WorkflowSpec]
    requirements: Path | None
    limits: Limits
    # "main" if present, else the only workflow; None when neither applies.
    default_workflow: str | None
    # Which hosts run which grains (decision 0013); the default: every grain everywhere.
    placement: Placement = field(default_factory=Placement)
    # Whether executions record their per-state history on the cluster (decision 0018).
    history: bool = True
    # What starts executions without a client (decision 0034), sorted by name.
    triggers: tuple[Trigger, ...] = ()

    def workflow(self, name: str | None = None) -> WorkflowSpec:
        """The workflow called ``name``, or the default one.

        Raises :class:`AppError` when there is no such workflow or no default.
        """
        if name is None:
            if self.default_workflow is None:
                names = ", ".join(sorted(self.workflows))
                raise AppError(
                    [
                        AppProblem(
                            f"{self.name}/{APP_FILE}",
                            "workflows",
                            f"several workflows ({names}) and none is called "
                            f"'{DEFAULT_WORKFLOW}': choose one",
                        )
                    ]
                )
            name = self.default_workflow
        try:
            return self.workflows[name]
        except KeyError:
            names = ", ".join(sorted(self.workflows))
            from sand.suggest import did_you_mean

            raise AppError(
                [
                    AppProblem(
                        f"{self.name}/{APP_FILE}",
                        "workflows",
                        f"no workflow called '{name}' (the app has: {names})"
                        + did_you_mean(name, self.workflows),
                    )
                ]
            ) from None


@dataclass(frozen=True, slots=True)
class AppProblem:
    """One rule broken by an application: where (file, field, line) and what."""

    file: str
    field: str | None
    rule: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        if self.field:
            return f"{where}: {self.field}: {self.rule}"
        return f"{where}: {self.rule}"


class AppError(Exception):
    """An application directory that cannot be used; ``problems`` lists every reason."""

    def __init__(self, problems: list[AppProblem]) -> None:
        self.problems: tuple[AppProblem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def load_app(
    path: str | Path,
    *,
    cluster_hosts: Sequence[str] | None = None,
    placement: Any = None,
) -> AppSpec:
    """Read and validate the application in directory ``path``.

    ``cluster_hosts``, when given, are the hosts a placement may name (the host agent
    knows them; ``sand validate`` does not). ``placement``, when not None, replaces the
    manifest's ``placement`` (a deploy parameter); its problems are located in the
    deploy request. Blocking (reads files). Raises :class:`AppError` listing every
    problem found.
    """
    # Imported here, not with this module: the loader builds this module's records (an
    # import cycle otherwise), and what only uses AppSpec does not load the rules (as the
    # YAML parser and the workflow loaders, decision 0025).
    from sand.app_loader import AppLoader

    return AppLoader(Path(path), cluster_hosts, placement).load()
