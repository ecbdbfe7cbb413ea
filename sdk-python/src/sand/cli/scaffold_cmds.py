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


def scaffold_files(name: str) -> dict[str, str]:
    """The files of a new application ``name``: relative path -> text."""
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
        "workflows/main.yaml": f"""\
            # yaml-language-server: $schema=../{SCHEMA_DIR}/workflow.schema.json
            # SAND native format: the input goes to `entry`; each grain names the grains
            # its output goes to. The output of the last grain is the execution's result.
            entry: normalize
            grains:
              normalize:
                next: greet
              greet: {{}}
            """,
        "grains/normalize.py": '''\
            """Tidy the input: {"name": "  ada  lovelace "} -> {"name": "Ada Lovelace"}."""


            def handle(event, context):
                name = " ".join(str(event.get("name", "")).split())
                if not name:
                    # an exception fails the execution with its class name and message
                    raise ValueError("the input needs a non-empty 'name'")
                return {"name": name.title()}
            ''',
        "grains/greet.py": '''\
            """Greet, and count the greetings per name in the app's data layer."""


            def handle(event, context):
                key = f"greetings/{event['name']}"
                count = context.data.get(key, 0) + 1
                context.data.put(key, count)
                return {"greeting": f"Hello, {event['name']}!", "times_greeted": count}
            ''',
        "tests/test_app.py": '''\
            """The app's workflow, run by the emulator: each grain in a forked process, as on
            the cluster. Run with `pytest tests`."""

            from pathlib import Path

            from sand.emulator import emulate

            APP = Path(__file__).resolve().parents[1]


            def test_main_greets():
                result = emulate(APP, {"name": "  ada   lovelace "})
                assert result.ok, result.cause
                assert result.output == {"greeting": "Hello, Ada Lovelace!", "times_greeted": 1}


            def test_main_emptyName_fails():
                result = emulate(APP, {"name": ""})
                assert result.error == "ValueError"
                assert "non-empty 'name'" in result.cause
            ''',
        "README.md": f"""\
            # {name}

            A SAND application made by `sand init {name}`.

            - `app.yaml`: the grains and workflows; `workflows/main.yaml`: normalize -> greet.
            - `grains/`: one Python file per grain, each defining `handle(event, context)`.
            - `tests/test_app.py`: runs the workflow under the emulator (`pytest tests`).
            - `{SCHEMA_DIR}/`: JSON Schemas of `app.yaml` and the workflow format, named by
              the `# yaml-language-server: $schema=...` lines (editors with the YAML
              language server complete and check the files as you type).

            ```sh
            sand validate .                                   # every problem, with file and line
            sand emulate . --input '{{"name": "ada"}}'          # run it here, no services
            pytest tests                                      # the app's tests
            sand deploy . && sand invoke {name} --input '{{"name": "ada"}}'   # on a cluster
            ```
            """,
    }
    documents = {path: textwrap.dedent(text) for path, text in files.items()}
    for which, filename in SCHEMAS.items():
        documents[f"{SCHEMA_DIR}/{filename}"] = schema_text(which)
    return documents


@click.command("init")
@click.argument("name")
@json_option
def init_cmd(name: str, as_json: bool) -> None:
    """Make ./NAME: a runnable application with two grains, a workflow, a test using the
    emulator, a README and the JSON Schemas for editors.

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
    files = scaffold_files(name)
    try:
        for relative, text in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        error_exit(f"cannot write ./{name}: {exc}", 1)
    if as_json:
        emit_json({"app": name, "path": str(root.resolve()), "files": sorted(files)})
        return
    say(f"created ./{name}: app.yaml, grains/, workflows/, tests/, README.md, {SCHEMA_DIR}/")
    say(f"next: cd {name} && sand validate . && pytest tests && sand emulate . --input '{{}}'")


@click.command("schema")
@click.argument("which", type=click.Choice(sorted(SCHEMAS)))
def schema_cmd(which: str) -> None:
    """Print the JSON Schema (Draft 2020-12) of app.yaml ('app') or of the native
    workflow format ('workflow'), for editors and other tools."""
    click.echo(schema_text(which), nl=False)


COMMANDS: list[click.Command] = [init_cmd, schema_cmd]
