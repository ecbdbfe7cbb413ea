"""The conformance cases, as data, for every driver of the workflow engine.

Each case is ``cases/<area>/<name>.yaml``::

    description: what the case shows
    definition: {...}          # inline ASL or SAND native definition
    input: {...}               # execution input (default {})
    expected:
      output: ...              # the execution succeeds with exactly this output
      # or
      error: States.Timeout    # the execution fails with this error ...
      cause: exact cause       # ... and optionally this cause
      cause_matches: regex     # ... or a cause matching this regex (re.search)
    mocks:                     # optional: grain calls answered without running the grain
      StateOrGrain:            #   a Task state or a grain (the state's name wins)
        - Return: {...}        #   call 0 returns this
        - Throw: {Error: E, Cause: c}   # call 1 fails; later calls repeat the last entry

A case with ``mocks`` is a test case of a mock file (``sand.mocks``; :meth:`Case.mock_file`
builds it): the in-process and emulator drivers honour it, the cluster driver skips the case
(mocks are a local-testing feature; the cluster runs every grain for real).

Grains come from the one test application in ``app/`` (``app.yaml`` maps grain names to
files defining ``handle(event, context)``). Drivers other than the in-process one (the
emulator, the cluster) load the same cases with ``load_cases()`` and compare their result
with ``Case.mismatches(...)``. Import this file by path, e.g.::

    spec = importlib.util.spec_from_file_location("conformance_cases", ".../cases.py")
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
CASES_DIR = HERE / "cases"
APP_DIR = HERE / "app"
_MISSING: Any = object()
# The one test case of a case's mock file (``Case.mock_file``).
MOCK_CASE = "conformance"


@dataclass(frozen=True)
class Case:
    """One conformance case; ``id`` is ``<area>/<name>``."""

    id: str
    path: Path
    description: str
    definition: dict[str, Any]
    input: Any
    output: Any = _MISSING
    error: str | None = None
    cause: str | None = None
    cause_matches: str | None = None
    mocks: dict[str, list[Any]] | None = None

    @property
    def expects_output(self) -> bool:
        return self.output is not _MISSING

    def mock_file(self) -> dict[str, Any] | None:
        """The case's ``mocks`` as a mock file whose one test case (``MOCK_CASE``) of the
        workflow ``main`` maps each key to a response of the same name; None without mocks."""
        if self.mocks is None:
            return None
        return {
            "Workflows": {"main": {"TestCases": {MOCK_CASE: {key: key for key in self.mocks}}}},
            "MockedResponses": {
                key: {str(n): entry for n, entry in enumerate(entries)}
                for key, entries in self.mocks.items()
            },
        }

    def definition_text(self) -> str:
        """The definition as YAML text (what a driver deploys)."""
        return yaml.safe_dump(self.definition, sort_keys=False)

    def mismatches(
        self, *, output: Any = _MISSING, error: str | None = None, cause: str | None = None
    ) -> list[str]:
        """How a driver's result differs from the expectation; ``[]`` when it conforms.

        Pass ``output=`` for a succeeded execution, ``error=``/``cause=`` for a failed one.
        """
        got = f"output {output!r}" if output is not _MISSING else f"error {error!r} ({cause!r})"
        if self.expects_output:
            if output is _MISSING:
                return [f"expected output {self.output!r}, got {got}"]
            if not _same_json(output, self.output):
                return [f"expected output {self.output!r}, got {output!r}"]
            return []
        if output is not _MISSING or error is None:
            return [f"expected error {self.error!r}, got {got}"]
        problems = []
        if error != self.error:
            problems.append(f"expected error {self.error!r}, got {error!r} (cause {cause!r})")
        if self.cause is not None and cause != self.cause:
            problems.append(f"expected cause {self.cause!r}, got {cause!r}")
        if self.cause_matches is not None and not re.search(self.cause_matches, cause or ""):
            problems.append(f"expected cause matching {self.cause_matches!r}, got {cause!r}")
        return problems


def _same_json(a: Any, b: Any) -> bool:
    # JSON equality: 1 == 1.0 but True != 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and (a is None) == (b is None)


def load_cases(root: Path = CASES_DIR) -> list[Case]:
    """Every case under ``root``, sorted by id. Raises ValueError for a malformed case file."""
    cases = []
    for path in sorted(root.glob("*/*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        case_id = f"{path.parent.name}/{path.stem}"
        if not isinstance(doc, dict) or "definition" not in doc or "expected" not in doc:
            raise ValueError(f"{case_id}: a case needs 'definition' and 'expected'")
        expected = doc["expected"]
        if not isinstance(expected, dict) or ("output" in expected) == ("error" in expected):
            raise ValueError(f"{case_id}: 'expected' needs exactly one of 'output' or 'error'")
        mocks = doc.get("mocks")
        if mocks is not None and not (
            isinstance(mocks, dict)
            and mocks
            and all(isinstance(v, list) and v for v in mocks.values())
        ):
            raise ValueError(f"{case_id}: 'mocks' maps states or grains to non-empty lists")
        cases.append(
            Case(
                id=case_id,
                path=path,
                description=doc.get("description", ""),
                definition=doc["definition"],
                input=doc.get("input", {}),
                output=expected.get("output", _MISSING),
                error=expected.get("error"),
                cause=expected.get("cause"),
                cause_matches=expected.get("cause_matches"),
                mocks=mocks,
            )
        )
    return cases


def app_manifest() -> dict[str, Any]:
    """The parsed ``app/app.yaml``."""
    return yaml.safe_load((APP_DIR / "app.yaml").read_text(encoding="utf-8"))


def app_grains() -> dict[str, Callable[[Any, Any], Any]]:
    """Grain name -> its ``handle`` function, imported in this process."""
    grains = {}
    for name, rel in app_manifest()["grains"].items():
        spec = importlib.util.spec_from_file_location(f"conformance_grain_{name}", APP_DIR / rel)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        grains[name] = module.handle
    return grains
