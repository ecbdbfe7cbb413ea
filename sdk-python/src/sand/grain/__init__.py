"""The grain API: what ``handle(event, context)`` receives, and how it is run.

A grain is a Python file defining::

    def handle(event, context):
        context.logger.info("got %s", event)
        return {"greeting": f"hello {event['name']}"}

:class:`Context` is the ``context``; :mod:`sand.grain.runner` runs one
invocation in a forked process and reports a :class:`GrainResult`.
"""

from sand.grain.context import Context, Data, NextGrainError
from sand.grain.runner import GrainError, GrainResult, Invocation

__all__ = ["Context", "Data", "GrainError", "GrainResult", "Invocation", "NextGrainError"]
