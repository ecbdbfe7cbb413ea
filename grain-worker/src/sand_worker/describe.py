"""``python -m sand_worker.describe APP_DIR``: validate an app and describe it as JSON.

The host agent runs this at deploy time (the validation rules live in Python,
in ``sand.app`` and ``sand_workflows``; Java never re-implements them). Prints
one JSON document on stdout and exits 0 when the app is valid, 1 when not:

    {"ok": true, "app": {"name": ..., "grains": [...], "events_per_instance": {...},
                         "default_workflow": ...,
                         "workflows": {"main": {"entry_grain": "upper"}},
                         "limits": {...}, "requirements": "requirements.txt" | null}}
    {"ok": false, "problems": ["hello/app.yaml: grains.upper: ...", ...]}
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sand.app import AppError, AppSpec, load_app
from sand_workflows.model import TaskState, Workflow


def entry_grain(workflow: Workflow, grains: list[str]) -> str:
    """The grain whose worker takes this workflow's INVOKE events (decision 0004):
    the grain of the start state when it is a Task or a native grain, else the
    first Task's grain in definition order, else the app's first grain."""
    start = workflow.states.get(workflow.start_at)
    if isinstance(start, TaskState) and start.resource in grains:
        return start.resource
    if workflow.kind == "native" and workflow.start_at in grains:
        return workflow.start_at
    for state in workflow.states.values():
        if isinstance(state, TaskState) and state.resource in grains:
            return state.resource
    return grains[0]


def describe(app: AppSpec) -> dict[str, Any]:
    grains = list(app.grains)
    return {
        "name": app.name,
        "grains": grains,
        # 1: a fresh process per event; more: the grain opted in to reuse (decision 0010)
        "events_per_instance": {
            name: spec.events_per_instance for name, spec in app.grains.items()
        },
        "default_workflow": app.default_workflow,
        "workflows": {
            name: {"entry_grain": entry_grain(spec.definition, grains)}
            for name, spec in app.workflows.items()
        },
        "limits": asdict(app.limits),
        "requirements": None
        if app.requirements is None
        else str(app.requirements.relative_to(app.root)),
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(
            json.dumps({"ok": False, "problems": ["usage: python -m sand_worker.describe APP_DIR"]})
        )
        return 2
    try:
        app = load_app(Path(argv[0]))
    except AppError as exc:
        print(json.dumps({"ok": False, "problems": [str(p) for p in exc.problems]}))
        return 1
    print(json.dumps({"ok": True, "app": describe(app)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
