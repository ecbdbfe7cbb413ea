"""The `sand` command line.

Each group of commands lives in its own module and registers itself on the
root group here; ``main`` is the console entry point. Shell completion is click's:
``eval "$(_SAND_COMPLETE=bash_source sand)"`` (``zsh_source``, ``fish_source``).
"""

from __future__ import annotations

import json
from typing import Any

import click

from sand import __version__


class _SandGroup(click.Group):
    """The root group: under ``--json``, a usage error is a JSON document on stderr too."""

    def invoke(self, ctx: click.Context) -> Any:
        wants_json = "--json" in (*ctx.protected_args, *ctx.args)
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            if not wants_json:
                raise
            error = {"message": exc.format_message(), "usage": isinstance(exc, click.UsageError)}
            click.echo(json.dumps({"error": error}, ensure_ascii=False), err=True)
            raise SystemExit(exc.exit_code) from None


@click.group(cls=_SandGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sand")
def cli() -> None:
    """SAND: serverless workflows with application sandboxes and a hierarchical bus."""


def _register() -> None:
    # Imported here so that each module can import `cli` without a cycle.
    from sand.cli import (
        app_cmds,
        auth_cmds,
        cluster_cmds,
        dev_cmds,
        exec_cmds,
        replay_cmds,
        scaffold_cmds,
        state_cmds,
        task_cmds,
        topic_cmds,
        trigger_cmds,
    )

    modules = (
        cluster_cmds,
        app_cmds,
        auth_cmds,
        dev_cmds,
        state_cmds,
        exec_cmds,
        task_cmds,
        trigger_cmds,
        topic_cmds,
        replay_cmds,
        scaffold_cmds,
    )
    for module in modules:
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main() -> None:
    cli(prog_name="sand")
