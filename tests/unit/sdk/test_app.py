"""The application format: load_app accepts valid apps and names every problem of others."""

from __future__ import annotations

from pathlib import Path

import pytest
from sand.app import AppError, Limits, load_app

from .conftest import CHAIN_WORKFLOW, ECHO_GRAIN, EXAMPLES, AppFactory

VALID_YAML = """\
name: hello
grains:
  first: grains/first.py
  second: grains/second.py
workflows:
  main: workflows/main.yaml
"""
VALID_FILES = {
    "grains/first.py": ECHO_GRAIN,
    "grains/second.py": ECHO_GRAIN,
    "workflows/main.yaml": CHAIN_WORKFLOW,
}


def problems_of(root: Path) -> list[str]:
    with pytest.raises(AppError) as info:
        load_app(root)
    return [str(p) for p in info.value.problems]


def test_loadApp_validApp_returnsFrozenSpec(make_app: AppFactory) -> None:
    """A valid app loads into absolute paths, default limits and 'main' as default workflow."""
    root = make_app(VALID_YAML, VALID_FILES)
    app = load_app(root)
    assert app.name == "hello"
    assert set(app.grains) == {"first", "second"}
    assert app.grains["first"].path == (root / "grains/first.py").resolve()
    assert app.limits == Limits()
    assert app.default_workflow == "main"
    assert app.workflow().definition.kind == "native"
    with pytest.raises(AttributeError):
        app.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        app.grains["x"] = app.grains["first"]  # type: ignore[index]


def test_loadApp_everyExample_isValid() -> None:
    """Every example application under examples/ loads."""
    for root in sorted(p for p in EXAMPLES.iterdir() if (p / "app.yaml").exists()):
        assert load_app(root).name == root.name


def test_loadApp_missingGrainFile_namesFileFieldAndRule(make_app: AppFactory) -> None:
    """A missing grain file is reported as app.yaml: grains.<name>: file ... does not exist."""
    root = make_app(VALID_YAML, {k: v for k, v in VALID_FILES.items() if "first" not in k})
    assert problems_of(root) == [
        f"{root}/app.yaml: grains.first: file grains/first.py does not exist"
    ]


def test_loadApp_badName_reportsPattern(make_app: AppFactory) -> None:
    """The app name must match [a-z0-9][a-z0-9-]{0,62}."""
    root = make_app(VALID_YAML.replace("name: hello", "name: Hello_World"), VALID_FILES)
    assert problems_of(root) == [
        f"{root}/app.yaml: name: 'Hello_World' must match [a-z0-9][a-z0-9-]{{0,62}}"
    ]


def test_loadApp_missingSections_reportsEach(make_app: AppFactory) -> None:
    """name, grains and workflows are required; all three are reported at once."""
    root = make_app("requirements: nothing.txt\n")
    got = problems_of(root)
    assert any("name: is required" in p for p in got)
    assert any("grains: is required" in p for p in got)
    assert any("workflows: is required" in p for p in got)
    assert any("requirements: file nothing.txt does not exist" in p for p in got)


def test_loadApp_yamlSyntaxError_givesLineAndColumn(make_app: AppFactory) -> None:
    """A YAML syntax error names the file with line and column."""
    root = make_app("name: hello\ngrains: [a, b\n")
    (problem,) = problems_of(root)
    assert problem.startswith(f"{root}/app.yaml:3:1: invalid YAML")


def test_loadApp_noAppYaml_isReported(tmp_path: Path) -> None:
    """A directory without app.yaml is not an app."""
    assert problems_of(tmp_path) == [
        f"{tmp_path}/app.yaml: file does not exist (every app directory needs one)"
    ]


def test_loadApp_unknownFieldAndBadLimits_areReported(make_app: AppFactory) -> None:
    """Unknown fields and limits that are not positive numbers are refused."""
    yaml_text = VALID_YAML + "colour: blue\nlimits: {timeout_s: 0, memory_mb: 1.5, cpus: 2}\n"
    got = problems_of(make_app(yaml_text, VALID_FILES))
    assert any("colour: unknown field" in p for p in got)
    assert any("limits.timeout_s: must be a number > 0, got 0" in p for p in got)
    assert any("limits.memory_mb: must be an integer > 0, got 1.5" in p for p in got)
    assert any("limits.cpus: unknown limit" in p for p in got)


def test_loadApp_cpuWeightOutOfRange_isRefusedNamingTheRange(make_app: AppFactory) -> None:
    """A CPU weight outside cgroup v2's 1..10000 is refused."""
    got = problems_of(make_app(VALID_YAML + "limits: {cpu_weight: 20000}\n", VALID_FILES))
    assert any("limits.cpu_weight: must be an integer from 1 to 10000, got 20000" in p for p in got)


def test_loadApp_cpuWeight_isKept_unsetLimitsAreTheClusters(make_app: AppFactory) -> None:
    """A CPU weight in range is kept; unset, it and memory_mb are the cluster's (None)."""
    root = make_app(VALID_YAML + "limits: {cpu_weight: 10}\n", VALID_FILES)
    assert load_app(root).limits == Limits(cpu_weight=10)
    assert Limits().cpu_weight is None and Limits().memory_mb is None


def test_loadApp_limits_overrideDefaults(make_app: AppFactory) -> None:
    """Given limits replace the defaults one by one."""
    root = make_app(VALID_YAML + "limits: {timeout_s: 2, payload_kb: 8}\n", VALID_FILES)
    assert load_app(root).limits == Limits(timeout_s=2.0, payload_kb=8)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x = 1\n", "handle: must define a top-level function handle(event, context)"),
        (
            "async def handle(event, context):\n    return 1\n",
            ":1: handle: must be a plain function",
        ),
        ("def handle(event):\n    return 1\n", ":1: handle: must accept two arguments"),
        ("handle = 42\n", ":1: handle: must be callable"),
        ("def handle(event, context)\n    return 1\n", ":1:27: invalid Python: expected ':'"),
    ],
)
def test_loadApp_grainWithoutUsableHandle_isReported(
    make_app: AppFactory, source: str, expected: str
) -> None:
    """The grain file is parsed, not imported: it must define a callable handle(event, context)."""
    root = make_app(VALID_YAML, {**VALID_FILES, "grains/first.py": source})
    (problem,) = problems_of(root)
    assert problem.startswith(f"{root}/grains/first.py")
    assert expected in problem


def test_loadApp_grainFileNotImported(make_app: AppFactory, tmp_path: Path) -> None:
    """Loading never runs grain code (top-level side effects do not happen)."""
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'w').close()\n" + ECHO_GRAIN
    load_app(make_app(VALID_YAML, {**VALID_FILES, "grains/first.py": source}))
    assert not marker.exists()


def test_loadApp_pathEscapingApp_isRefused(make_app: AppFactory) -> None:
    """Grain paths must stay inside the app directory and be Python files."""
    yaml_text = VALID_YAML.replace("grains/second.py", "../outside.py").replace(
        "grains/first.py", "workflows/main.yaml"
    )
    got = problems_of(make_app(yaml_text, VALID_FILES))
    assert any(
        "grains.second: path ../outside.py must stay inside the app directory" in p for p in got
    )
    assert any(
        "grains.first: file workflows/main.yaml must be a Python file (.py)" in p for p in got
    )


def test_loadApp_invalidWorkflow_reportsWorkflowProblemsWithFile(make_app: AppFactory) -> None:
    """Workflow problems (from sand_workflows) name the definition file and the grain."""
    bad = "entry: first\ngrains:\n  first: {next: missing}\n"
    root = make_app(VALID_YAML, {**VALID_FILES, "workflows/main.yaml": bad})
    got = problems_of(root)
    assert got and all(p.startswith(f"{root}/workflows/main.yaml: grains.first") for p in got)
    assert any("missing" in p for p in got)


def test_loadApp_workflowUsingUnknownGrain_isRefused(make_app: AppFactory) -> None:
    """A workflow may only use grains the app defines."""
    asl = '{"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "ghost", "End": true}}}'
    yaml_text = VALID_YAML.replace("workflows/main.yaml", "workflows/main.json")
    root = make_app(yaml_text, {**VALID_FILES, "workflows/main.json": asl})
    got = problems_of(root)
    assert any("ghost" in p and "workflows/main.json" in p for p in got)


def test_loadApp_workflowSyntaxError_hasLineAndColumn(make_app: AppFactory) -> None:
    """A malformed JSON definition is reported with its line and column."""
    yaml_text = VALID_YAML.replace("workflows/main.yaml", "workflows/main.json")
    root = make_app(yaml_text, {**VALID_FILES, "workflows/main.json": '{"StartAt": }'})
    (problem,) = problems_of(root)
    assert problem.startswith(f"{root}/workflows/main.json:1:13: malformed JSON")


def test_defaultWorkflow_onlyOneOrMain(make_app: AppFactory) -> None:
    """The default is 'main' if present, else the only workflow, else none (then asking fails)."""
    files = {**VALID_FILES, "workflows/other.yaml": CHAIN_WORKFLOW}
    one = make_app(VALID_YAML.replace("main:", "only:"), files, name="one")
    assert load_app(one).default_workflow == "only"
    two = make_app(
        VALID_YAML.replace(
            "  main: workflows/main.yaml", "  a: workflows/main.yaml\n  b: workflows/other.yaml"
        ),
        files,
        name="two",
    )
    app = load_app(two)
    assert app.default_workflow is None
    with pytest.raises(AppError, match="several workflows"):
        app.workflow()
    with pytest.raises(AppError, match="no workflow called 'zzz'"):
        app.workflow("zzz")
    assert app.workflow("b").name == "b"


def test_loadApp_workflowNotUtf8_isReported(make_app: AppFactory) -> None:
    """A definition file that is not UTF-8 is a problem, not a crash."""
    root = make_app(VALID_YAML, VALID_FILES)
    (root / "workflows/main.yaml").write_bytes(b"entry: \xff\xfe\n")
    (problem,) = problems_of(root)
    assert "workflows.main: file workflows/main.yaml is not UTF-8 text" in problem


def test_loadApp_grainLongForm_setsEventsPerInstance(make_app: AppFactory) -> None:
    """A grain written as a mapping gives its file and opts in to reuse; the short form
    keeps fork-per-event (1)."""
    text = VALID_YAML.replace(
        "  second: grains/second.py\n",
        "  second:\n    file: grains/second.py\n    events_per_instance: 50\n",
    )
    app = load_app(make_app(text, VALID_FILES))
    assert app.grains["first"].events_per_instance == 1
    assert not app.grains["first"].reuses_instances
    assert app.grains["second"].events_per_instance == 50
    assert app.grains["second"].path.name == "second.py"


def test_loadApp_grainLongFormMistakes_areEachNamed(make_app: AppFactory) -> None:
    """Unknown options, a missing file, a bad count and a missing file path are reported
    with the field that breaks the rule."""
    text = VALID_YAML.replace(
        "  first: grains/first.py\n  second: grains/second.py\n",
        "  first:\n    file: grains/first.py\n    events_per_instance: 0\n    reuse: true\n"
        "  second:\n    events_per_instance: 2\n",
    )
    root = make_app(text, VALID_FILES)
    assert problems_of(root) == [
        f"{root}/app.yaml: grains.first.reuse: unknown grain option "
        "(allowed: file, events_per_instance)",
        f"{root}/app.yaml: grains.first.events_per_instance: must be an integer >= 1 "
        "(1: a fresh process per event), got 0",
        f"{root}/app.yaml: grains.second.file: is required (the grain's Python file)",
    ]


def test_loadApp_grainLongFormMissingFile_namesTheFileField(make_app: AppFactory) -> None:
    text = VALID_YAML.replace("  first: grains/first.py\n", "  first:\n    file: grains/nope.py\n")
    root = make_app(text, VALID_FILES)
    assert problems_of(root) == [
        f"{root}/app.yaml: grains.first.file: file grains/nope.py does not exist"
    ]


def test_appYaml_duplicateKey_refusedWithLine(make_app: AppFactory) -> None:
    """app.yaml with a grain given twice: refused at the second, naming the key."""
    root = make_app(
        "name: x\ngrains:\n  a: a.py\n  a: b.py\nworkflows: {main: wf.yaml}\n",
        {"a.py": "def handle(e, c):\n    return e\n", "wf.yaml": "entry: a\ngrains: {a: {}}\n"},
    )
    with pytest.raises(AppError) as caught:
        load_app(root)
    assert [str(p) for p in caught.value.problems] == [
        f"{root}/app.yaml:4:3: invalid YAML: duplicate key 'a' (first given on line 3)"
    ]
