"""SAND: the grain API, the client SDK, the `sand` command line and the emulator.

``sand.test_state`` runs one state of a workflow alone (:mod:`sand.single_state`).
"""

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "test_state"]


def __getattr__(name: str) -> Any:
    # Imported on first use: ``sand`` itself stays light for the command line.
    if name == "test_state":
        from sand.single_state import test_state

        return test_state
    raise AttributeError(f"module 'sand' has no attribute {name!r}")
