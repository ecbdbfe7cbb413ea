"""Raises an exception whose class name is event["error"] and message event["cause"].

The workflow error name is the exception's class name, so any name works in ErrorEquals.
"""


class CustomError(Exception):
    """A named error the cases catch by name."""


class OtherError(Exception):
    """A second named error, to check that Retry/Catch match by exact name."""


_KNOWN = {"CustomError": CustomError, "OtherError": OtherError}


def handle(event, context):
    name = event.get("error", "CustomError")
    cls = _KNOWN.get(name) or type(name, (Exception,), {})
    raise cls(event.get("cause", ""))
