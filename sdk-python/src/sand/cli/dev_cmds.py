"""Developer commands that need no running services: validate, emulate."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
