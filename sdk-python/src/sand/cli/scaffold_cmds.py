"""Starting an application: ``sand init NAME`` writes a runnable one, with a test;
``sand schema`` prints the JSON Schemas editors use."""

from __future__ import annotations

import textwrap
from pathlib import Path

import click

from sand import contracts
from sand.cli.output import emit_json, error_exit, json_option, say
from sand.schemas import SCHEMAS, schema_text

# Where the scaffold keeps its copy of the schemas, for the editor's `$schema=` lines.
SCHEMA_DIR = ".schemas"


# What `sand init` suggests first: it works as printed (tests/unit/sdk/test_cli_init.py).
EXAMPLE_INPUT = '{"name": "ada"}'
TEMPLATES = ("native", "asl")

_NATIVE_WORKFLOW = f"""\
    # yaml-language-server: $schema=../{SCHEMA_DIR}/workflow.schema.json
    # SAND native format: the input goes to `entry`; each grain names the grains
    # its output goes to. The output of the last grain is the execution's result.
    entry: normalize
    grains:
      normalize:
        next: greet
      greet: {{}}
    """

_ASL_WORKFLOW = """\
    # Amazon States Language (JSONPath), in YAML or JSON: a Task's Resource names a grain
    # of app.yaml. A Normalize that raises ValueError is caught and ends in BadInput.
    Comment: Greet a person by name.
    StartAt: Normalize
    States:
      Normalize:
        Type: Task
        Resource: normalize
        Retry:
          - ErrorEquals: [States.Timeout]
            MaxAttempts: 2
        Catch:
          - ErrorEquals: [ValueError]
            ResultPath: $.error
            Next: BadInput
        Next: Greet
      Greet:
        Type: Task
        Resource: greet
        End: true
      BadInput:
        Type: Fail
        Error: BadInput
        Cause: the input needs a non-empty 'name'
    """

# how each template's workflow ends for an empty name: (error, a word of its cause)
_EMPTY_NAME_FAILS = {
    "native": ("ValueError", "non-empty 'name'"),
    "asl": ("BadInput", "non-empty 'name'"),
}


def scaffold_files(name: str, template: str = "native") -> dict[str, str]:
    """The files of a new application ``name`` whose workflow is in the ``template``'s
    format (``native`` or ``asl``): relative path -> text."""
    error, cause = _EMPTY_NAME_FAILS[template]
    shape = "normalize -> greet" + (", BadInput on a bad name" if template == "asl" else "")
    files = {
        "app.yaml": f"""\
            # yaml-language-server: $schema={SCHEMA_DIR}/app.schema.json
            # The application: its grains (Python files) and workflows. `sand validate .`
            # checks it; the schema above lets an editor complete and check it as you type.
            name: {name}
            grains:
              normalize: grains/normalize.py
              greet: grains/greet.py
            workflows:
              main: workflows/main.yaml
            """,
        "workflows/main.yaml": _ASL_WORKFLOW if template == "asl" else _NATIVE_WORKFLOW,
        "grains/normalize.py": '''\
            """Tidy the input: {"name": "  ada  lovelace "} -> {"name": "Ada Lovelace"}."""


            def handle(event, context):
                name = " ".join(str(event.get("name", "")).split())
                if not name:
                    # an exception fails the task with its class name and message
                    raise ValueError("the input needs a non-empty 'name'")
                return {"name": name.title()}
            ''',
        "grains/greet.py": '''\
            """Greet, and count the greetings per name in the app's data layer."""


            def handle(event, context):
                key = f"greetings/{event['name']}"
                count = context.data.get(key, 0) + 1
                context.data.put(key, count)
                context.logger.info("greeted %s %d time(s)", event["name"], count)
                return {"greeting": f"Hello, {event['name']}!", "times_greeted": count}
            ''',
        "tests/test_app.py": f'''\
            """The app's workflow, run by the emulator: each grain in a forked process, as on
            the cluster. Run with `pytest tests`."""

            from pathlib import Path

            from sand.emulator import emulate

            APP = Path(__file__).resolve().parents[1]


            def test_main_greets():
                result = emulate(APP, {{"name": "  ada   lovelace "}})
                assert result.ok, result.cause
                assert result.output == {{"greeting": "Hello, Ada Lovelace!", "times_greeted": 1}}


            def test_main_emptyName_fails():
                result = emulate(APP, {{"name": ""}})
                assert result.error == "{error}"
                assert "{cause}" in result.cause
            ''',
        "README.md": f"""\
            # {name}

            A SAND application made by `sand init {name}` ({template} workflow).

            - `app.yaml`: the grains and workflows; `workflows/main.yaml`: {shape}.
            - `grains/`: one Python file per grain, each defining `handle(event, context)`.
            - `tests/test_app.py`: runs the workflow under the emulator (`pytest tests`).
            - `{SCHEMA_DIR}/`: JSON Schemas of `app.yaml` and the native workflow format, named
              by the `# yaml-language-server: $schema=...` lines (editors with the YAML
              language server complete and check the files as you type).

            ```sh
            sand validate .                                   # every problem, with file and line
            sand emulate . --input '{EXAMPLE_INPUT}'              # run it here, no services
            pytest tests                                      # the app's tests
            sand deploy . && sand invoke {name} --input '{EXAMPLE_INPUT}'   # on a cluster
            ```
            """,
    }
    documents = {path: textwrap.dedent(text) for path, text in files.items()}
    for which, filename in SCHEMAS.items():
        documents[f"{SCHEMA_DIR}/{filename}"] = schema_text(which)
    return documents


@click.command("init")
@click.argument("name")
@click.option(
    "--template",
    type=click.Choice(TEMPLATES),
    default="native",
    show_default=True,
    help="the workflow's format: SAND's native one, or the Amazon States Language",
)
@json_option
def init_cmd(name: str, template: str, as_json: bool) -> None:
    """Make ./NAME: a runnable application with two grains, a workflow (native or ASL), a
    test using the emulator, a README and the JSON Schemas for editors.

    Refuses an invalid application name and a directory that exists and is not empty."""
    if not contracts.APP_NAME.fullmatch(name):
        error_exit(
            f"'{name}' is not a valid application name: it must match "
            f"{contracts.APP_NAME.pattern} (lower-case letters, digits and '-', "
            "starting with a letter or digit, at most 63 characters)",
            2,
        )
    root = Path(name)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        what = "a directory that is not empty" if root.is_dir() else "a file"
        error_exit(f"./{name} exists and is {what}: choose another name or remove it", 2)
    files = scaffold_files(name, template)
    try:
        for relative, text in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        error_exit(f"cannot write ./{name}: {exc}", 1)
    if as_json:
        emit_json(
            {"app": name, "path": str(root.resolve()), "template": template, "files": sorted(files)}
        )
        return
    say(
        f"created ./{name} ({template} workflow): app.yaml, grains/, workflows/, tests/, "
        f"README.md, {SCHEMA_DIR}/"
    )
    say(f"next: {next_commands(name)}")


def next_commands(name: str) -> str:
    """The commands ``sand init`` suggests, as one shell line run from where it ran."""
    return (
        f"cd {name} && sand validate . && pytest tests && sand emulate . --input '{EXAMPLE_INPUT}'"
    )


@click.command("schema")
@click.argument("which", type=click.Choice(sorted(SCHEMAS)))
def schema_cmd(which: str) -> None:
    """Print the JSON Schema (Draft 2020-12) of app.yaml ('app') or of the native
    workflow format ('workflow'), for editors and other tools."""
    click.echo(schema_text(which), nl=False)


COMMANDS: list[click.Command] = [init_cmd, schema_cmd]
