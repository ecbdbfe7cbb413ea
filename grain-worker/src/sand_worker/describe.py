"""``python -m sand_worker.describe APP_DIR [--hosts H1,H2] [--placement JSON]``: validate
an app and describe it as JSON.

The host agent runs this at deploy time (the validation rules live in Python,
in ``sand.app`` and ``sand_workflows``; Java never re-implements them). Prints
one JSON document on stdout and exits 0 when the app is valid, 1 when not:

    {"ok": true, "app": {"name": ..., "grains": [...], "events_per_instance": {...},
                         "default_workflow": ...,
                         "workflows": {"main": {"entry_grain": "upper"}},
                         "limits": {...}, "requirements": "requirements.txt" | null,
                         "placement": {"hosts": [...], "grains": {"upper": [...]}},
                         "triggers": [{"name": "nightly", "kind": "schedule", ...}, ...]}}
    {"ok": false, "problems": ["hello/app.yaml: grains.upper: ...", ...]}

A valid app's document also holds ``"workflow_sources"``: per workflow its file
(relative to the app), its kind (``asl`` or ``native``), its parsed definition and
its text, which the agent keeps beside the metadata (not in it: the metadata goes to
Redis with every deploy) to answer ``GET /v1/apps/{app}/workflows/{workflow}``.

``triggers`` (decision 0034) lists the app's triggers sorted by name, every default filled
in (``sand.triggers.to_description``); ``[]`` when it has none. The agent fires them.

``--hosts`` lists the cluster's hosts: the placement may name only those, and is
described resolved (every grain with its hosts, in that order); without it the
placement is described as written. ``--placement`` (a JSON object) replaces the
manifest's placement (the deploy parameter).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sand.app import AppError, AppSpec, load_app
from sand.triggers import to_description
from sand_workflows.colocation import entry_grain


def workflow_sources(app: AppSpec) -> dict[str, Any]:
    """Each workflow's file, kind, parsed definition and source text, as loaded."""
    return {
        name: {
            "file": str(spec.path.relative_to(app.root)),
            "kind": str(spec.definition.kind),
            "definition": spec.definition.definition,
            "source": spec.path.read_text(encoding="utf-8"),
        }
        for name, spec in app.workflows.items()
    }


def describe(app: AppSpec, cluster_hosts: list[str] | None = None) -> dict[str, Any]:
    grains = list(app.grains)
    return {
        "name": app.name,
        "grains": grains,
        # 1: a fresh process per event; more: the grain opted in to reuse (decision 0010)
        "events_per_instance": {
            name: spec.events_per_instance for name, spec in app.grains.items()
        },
        "default_workflow": app.default_workflow,
        # whether executions record their per-state history (decision 0018)
        "history": app.history,
        "workflows": {
            name: {"entry_grain": entry_grain(spec.definition, grains)}
            for name, spec in app.workflows.items()
        },
        "limits": asdict(app.limits),
        "requirements": None
        if app.requirements is None
        else str(app.requirements.relative_to(app.root)),
        "placement": app.placement.to_json()
        if cluster_hosts is None
        else app.placement.resolve(grains, cluster_hosts),
        "triggers": to_description(app.triggers),
    }


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    # errors go into the JSON answer, not to stderr with exit 2 of argparse's own
    def error(self, message: str) -> Any:
        raise _Usage(message)


def main(argv: list[str]) -> int:
    parser = _Parser(prog="python -m sand_worker.describe", add_help=False)
    parser.add_argument("app_dir")
    parser.add_argument("--hosts", default=None)
    parser.add_argument("--placement", default=None)
    try:
        args = parser.parse_args(argv)
        override = None if args.placement is None else json.loads(args.placement)
    except (_Usage, ValueError) as exc:
        usage = "usage: python -m sand_worker.describe APP_DIR [--hosts H1,H2] [--placement JSON]"
        print(json.dumps({"ok": False, "problems": [f"{usage}: {exc}"]}))
        return 2
    hosts = None if args.hosts is None else [h for h in args.hosts.split(",") if h]
    try:
        app = load_app(Path(args.app_dir), cluster_hosts=hosts, placement=override)
    except AppError as exc:
        print(json.dumps({"ok": False, "problems": [str(p) for p in exc.problems]}))
        return 1
    document = {"ok": True, "app": describe(app, hosts), "workflow_sources": workflow_sources(app)}
    # default=str: a YAML definition may hold values JSON has no type for (dates)
    print(json.dumps(document, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
