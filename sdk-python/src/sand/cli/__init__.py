"""The `sand` command line.

Each group of commands lives in its own module and registers itself on the
root group here; ``main`` is the console entry point.
"""

from __future__ import annotations

import click

from sand import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sand")
def cli() -> None:
    """SAND: serverless workflows with application sandboxes and a hierarchical bus."""


def _register() -> None:
    # Imported here so that each module can import `cli` without a cycle.
    from sand.cli import app_cmds, auth_cmds, cluster_cmds, dev_cmds, exec_cmds

    for module in (cluster_cmds, app_cmds, auth_cmds, dev_cmds, exec_cmds):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main() -> None:
    cli(prog_name="sand")
