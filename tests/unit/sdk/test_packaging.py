"""sdk-python installs like a package (decision 0036): what setuptools puts in its wheel holds
the generated contracts and every data file the code reads, and every package its modules
import is one it declares. Offline: the wheel's tree is setuptools' ``build_py`` output, made
with the venv's setuptools from a copy of sdk-python (tests/integration/test_clean_install.py
installs the real wheel into a clean venv, from PyPI)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.sdk.conftest import REPO

SDK = REPO / "sdk-python"
WORKFLOWS = REPO / "workflows"
# Packages of this repository that the SDK imports without an index to fetch them from.
OWN = {"sand", "sand_bus", "sand_contracts", "sand_workflows"}


@pytest.fixture(scope="module")
def wheel_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files of sdk-python's wheel, as setuptools lays them out (dist-info aside)."""
    work = tmp_path_factory.mktemp("sdk-build")
    copy = work / "sdk-python"  # setuptools writes build/ and *.egg-info beside the sources
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    shutil.copytree(SDK, copy, ignore=ignore)
    # the wheel ships sand_workflows from ../workflows/src (decision 0036)
    shutil.copytree(WORKFLOWS, work / "workflows", ignore=ignore)
    lib = work / "lib"
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "from setuptools import setup; setup()",
            "-q",
            "build_py",
            "-d",
            lib,
        ],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return lib


def _distribution(requirement: str) -> str:
    """``'confluent-kafka>=2'`` -> ``'confluent_kafka'``: a PEP 503 name, ``_`` for ``-``."""
    name = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert name is not None, requirement
    return re.sub(r"[-_.]+", "_", name.group()).lower()


def _declared() -> tuple[set[str], set[str]]:
    """The distributions sdk-python requires always, and those its extras add."""
    project = tomllib.loads((SDK / "pyproject.toml").read_text())["project"]
    core = {_distribution(r) for r in project["dependencies"]}
    extras = {_distribution(r) for rs in project["optional-dependencies"].values() for r in rs}
    return core, extras


def _imports(tree: ast.Module) -> Iterator[tuple[str, bool]]:
    """Every absolute import's top-level name, and whether it runs when the module is imported
    (at module level, outside ``if TYPE_CHECKING:``) rather than inside a function."""

    def walk(node: ast.AST, at_import: bool) -> Iterator[tuple[str, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                yield from ((alias.name.split(".")[0], at_import) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                yield child.module.split(".")[0], at_import
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # for the type checker only
            else:
                lazy = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                yield from walk(child, at_import and not lazy)

    yield from walk(tree, True)


def test_wheel_holdsTheGeneratedContractsAndEveryDataFile(wheel_tree: Path) -> None:
    """sand_bus and sand_contracts ship beside sand, and no file under src/ is left out (a
    missing defaults.toml or schema breaks `sand` only once installed from the wheel)."""
    for package in ("sand_bus", "sand_contracts"):
        assert (wheel_tree / package / "ttypes.py").is_file(), f"{package} is not in the wheel"
    sources = {
        p.relative_to(root)
        for root in (SDK / "src", WORKFLOWS / "src")
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and ".egg-info" not in str(p)
    }
    shipped = {p.relative_to(wheel_tree) for p in wheel_tree.rglob("*") if p.is_file()}
    assert sorted(map(str, sources - shipped)) == []


def test_everyImport_isDeclared(wheel_tree: Path) -> None:
    """A package imported when a module loads is a dependency of sand-sdk; one imported only
    inside a function (the cluster commands' Kafka and Cassandra clients) may come from an
    extra instead. Import names map to distributions through the venv's installed metadata."""
    core, extras = _declared()
    to_distribution = importlib.metadata.packages_distributions()
    missing: set[str] = set()
    for path in sorted(wheel_tree.rglob("*.py")):
        if path.relative_to(wheel_tree).parts[0] in ("sand_bus", "sand_contracts"):
            # generated: they import thrift (declared) and themselves only
            continue
        for name, at_import in _imports(ast.parse(path.read_text(), str(path))):
            if name in sys.stdlib_module_names or name in OWN or name == "__future__":
                continue
            dists = {_distribution(d) for d in to_distribution.get(name, [name])}
            allowed = core if at_import else core | extras
            if not dists & allowed:
                where = "dependencies" if at_import else "dependencies or an extra"
                missing.add(f"{path.relative_to(wheel_tree)} imports {name}: not in {where}")
    assert not missing, "declare them in sdk-python/pyproject.toml:\n" + "\n".join(sorted(missing))


def test_wheel_importsAlone_withItsDependencies(wheel_tree: Path) -> None:
    """Every module of the wheel imports from the wheel's tree and the venv's third-party
    packages only: no checkout path, no .pth file (``-S`` skips them)."""
    modules = sorted(
        ".".join(p.relative_to(wheel_tree).with_suffix("").parts).removesuffix(".__init__")
        for p in wheel_tree.rglob("*.py")
    )
    site_packages = sysconfig.get_paths()["purelib"]
    script = (
        "import importlib, sys\n"
        f"sys.path[1:] = [p for p in sys.path[1:] if 'site-packages' not in p] "
        f"+ [{str(wheel_tree)!r}, {site_packages!r}]\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "import sand_contracts\n"
        "print(sand_contracts.__file__)\n"
    )
    run = subprocess.run(
        [sys.executable, "-S", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=wheel_tree.parent,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == str(wheel_tree / "sand_contracts" / "__init__.py")
