"""The grain API: what ``handle(event, context)`` receives, and how it is run.

A grain is a Python file defining::

    def handle(event, context):
        context.logger.info("got %s", event)
        return {"greeting": f"hello {event['name']}"}

:class:`Context` is the ``context``. Each invocation runs in a process forked
for it and ends as a :class:`GrainResult`:

- :mod:`sand.grain.runner` — import a grain, call it under a deadline
  (``invoke``), fork one invocation (``fork_invocation``);
- :mod:`sand.grain.child` — the forked child's entry and exit;
- :mod:`sand.grain.pool` — the parent's monitoring loop: deadlines, kills, reaping;
- :mod:`sand.grain.children` — a forked instance as the parent sees it, and how it ended;
- :mod:`sand.grain.pipes` — the parent's end of a task pipe;
- :mod:`sand.grain.exits` — the child's exit codes, and what every exit status means;
- :mod:`sand.grain.channel` — the frames a child sends its parent;
- :mod:`sand.grain.result` — ``Invocation``, ``GrainResult`` and its wire form.

The grain worker and the emulator both run grains through this fork model.
"""

from sand.grain.context import Context, Data, NextGrainError
from sand.grain.result import GrainError, GrainResult, Invocation

__all__ = ["Context", "Data", "GrainError", "GrainResult", "Invocation", "NextGrainError"]
