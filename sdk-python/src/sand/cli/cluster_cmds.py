"""Cluster commands: up, down, status."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
