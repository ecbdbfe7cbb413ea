"""Shared pytest set-up: integration tests are marked by their folder, and grouped for
pytest-xdist by the cluster they need (``make integration`` runs them on several workers
with ``--dist loadgroup``; decision 0037)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import cpu_report

_TESTS = Path(__file__).parent
_INTEGRATION = _TESTS / "integration"
_FAULTS = _TESTS / "faults"
# A test's own timeout mark is a hang guard set for a machine to itself; `make test` runs the
# unit tests beside the parallel integration phase, where a scan of every process or a fork
# can take several times as long (a 10 s guard timed out there once): the unit target
# stretches every such mark by this factor (decision 0037).
TIMEOUT_SCALE = float(os.environ.get("SAND_TEST_TIMEOUT_SCALE", "1"))

# The modules that take longest (minutes: a schedule waits for real minute boundaries, the
# multi-host modules start clusters of their own, the fault scenarios restart whole ones),
# longest first as measured (decision 0037), so the workers start them first and the short
# modules fill in around them: a module that mostly waits (a schedule's minutes) then
# overlaps the busy start of the others instead of ending the run alone. Order only: a
# module missing here runs later. `make integration` passes --no-loadscope-reorder, or
# xdist reorders the groups by their number of tests (the many short conformance cases
# first, these last).
LONGEST_FIRST = [
    "tests/faults",
    "tests/integration/test_multihost.py",
    "tests/integration/test_triggers.py",
    "tests/integration/test_apps_e2e.py",
    "tests/integration/test_api_fuzz.py",
    "tests/integration/test_gui_executions.py",
    "tests/integration/test_gui.py",
    "tests/integration/test_placement.py",
    "tests/integration/test_conformance_cluster.py",
    "tests/integration/test_gui_triggers.py",
    "tests/integration/test_global_data.py",
    "tests/integration/test_cluster_lifecycle.py",
    "tests/integration/test_gateway_refusals.py",
    "tests/integration/test_sandbox_attacks.py",
    "tests/integration/test_clean_install.py",
    "tests/integration/test_sandbox_lifecycle.py",
]


def _group(path: Path) -> str:
    """The xdist group of a test file: every module of ``tests/faults`` shares that
    directory's cluster, so they are one group; any other module is a group of its own (its
    module-scoped clusters and apps stay on one worker, which starts the suite's cluster
    once for all the modules it runs)."""
    relative = path.relative_to(_TESTS.parent)
    return "tests/faults" if _FAULTS in path.parents else str(relative)


def _rank(group: str) -> int:
    return LONGEST_FIRST.index(group) if group in LONGEST_FIRST else len(LONGEST_FIRST)


# tryfirst: xdist's own hook turns the xdist_group marks into the groups it schedules by, and
# runs before a conftest's hook otherwise (this file is loaded before xdist registers it)
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.fspath))
        if _INTEGRATION in path.parents:
            item.add_marker(pytest.mark.integration)
        if _INTEGRATION in path.parents or _FAULTS in path.parents:
            item.add_marker(pytest.mark.xdist_group(_group(path)))
    if TIMEOUT_SCALE != 1:
        for item in items:
            mark = item.get_closest_marker("timeout")
            if mark is not None and mark.args:
                stretched = pytest.mark.timeout(float(mark.args[0]) * TIMEOUT_SCALE)
                item.add_marker(stretched, append=False)  # the closest mark wins
    # stable: within a rank, the collection order stays (xdist needs the same on every worker)
    items.sort(key=lambda item: _rank(_group(Path(str(item.fspath)))))


@pytest.fixture(scope="session", autouse=True)
def no_leftovers() -> Iterator[None]:
    """After the session: no process of any state dir a cluster of it used is left (decision
    0021), grain workers and instances of killed hosts included. Here, at the root, so it is
    set up before and torn down after every cluster fixture of every directory (one per
    directory would check while another directory's cluster is still up)."""
    yield
    from tests.integration.conftest import USED_STATE_DIRS, assert_no_leftovers

    assert_no_leftovers(USED_STATE_DIRS)


_SAMPLER: list[cpu_report.CpuSampler] = []


def pytest_configure(config: pytest.Config) -> None:
    """The controller of a run that asks for it (``SAND_TEST_CPU_REPORT=1``: the Makefile's
    integration and fault targets) samples the machine's CPU by part while the run lasts
    (tests/cpu_report.py); not an xdist worker: the controller sees their processes too."""
    if hasattr(config, "workerinput") or os.environ.get(cpu_report.REPORT_ENV) != "1":
        return
    _SAMPLER.append(cpu_report.CpuSampler().start())


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """It ends with where the CPU went (issue 27)."""
    if not _SAMPLER:
        return
    use = _SAMPLER.pop().stop()
    terminalreporter.write_sep("=", "CPU seconds by part, machine-wide (tests/cpu_report.py)")
    for line in cpu_report.table(use):
        terminalreporter.write_line(line)
