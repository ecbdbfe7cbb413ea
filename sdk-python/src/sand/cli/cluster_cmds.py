"""Cluster commands: up, down, status, config."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from sand.cluster.config import ClusterConfig, ConfigError, load_config
from sand.cluster.image import ImageError, ensure_base_image
from sand.cluster.services import PrerequisiteError
from sand.cluster.supervisor import ServiceStatus, StartError, Supervisor

_err = Console(stderr=True, highlight=False)
_out = Console(highlight=False)

config_option = click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Config file (TOML) layered over the defaults; also $SAND_CONFIG.",
)


def cluster_config(config_file: Path | None) -> ClusterConfig:
    """Load the config or exit 2 with the message (no traceback)."""
    try:
        return load_config(config_file)
    except ConfigError as exc:
        raise click.ClickException(f"configuration: {exc}") from exc


def supervisor(config: ClusterConfig) -> Supervisor:
    hooks = {}
    if config.docker_mode != "off":
        hooks["dockerd" if config.docker_mode == "managed" else "redis"] = lambda: _import_image(
            config
        )
    return Supervisor(
        config, report=lambda line: _err.print(f"[dim]{line}[/dim]"), after_ready=hooks
    )


def _import_image(config: ClusterConfig) -> None:
    started = time.monotonic()
    try:
        if ensure_base_image(config):
            _err.print(
                f"[dim]imported sandbox image {config.base_image} in "
                f"{time.monotonic() - started:.1f} s[/dim]"
            )
    except ImageError as exc:
        raise StartError("dockerd", str(exc), None) from exc


@click.command()
@config_option
def up(config_file: Path | None) -> None:
    """Start the single-host cluster and wait until every service is healthy."""
    config = cluster_config(config_file)
    sup = supervisor(config)
    started_at = time.monotonic()
    try:
        started = sup.up()
    except (StartError, PrerequisiteError) as exc:
        _err.print(f"[bold red]sand up failed[/bold red] — {exc}")
        _err.print("nothing of this attempt is left running.")
        raise SystemExit(1) from None
    total = time.monotonic() - started_at
    report = {
        "total_s": round(total, 2),
        "services": [asdict(s) for s in started],
    }
    (config.run_dir / "up-report.json").write_text(json.dumps(report, indent=2) + "\n")
    _print_status(sup)
    fresh = [s for s in started if not s.already_running]
    verb = "started" if fresh else "already running"
    _err.print(f"cluster {verb}: all healthy in {total:.1f} s; state in {config.state_dir}")
    _err.print(f"gateway: {config.gateway_url}")


@click.command()
@config_option
def down(config_file: Path | None) -> None:
    """Stop every service of the cluster; leaves no process of ours running."""
    config = cluster_config(config_file)
    stopped = supervisor(config).down()
    _err.print(f"stopped {', '.join(stopped)}" if stopped else "nothing was running")


@click.command()
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status(config_file: Path | None, as_json: bool) -> None:
    """Show every service with its pid, address, health and memory. Exit 1 unless all healthy."""
    config = cluster_config(config_file)
    sup = supervisor(config)
    statuses = sup.status() if as_json else _print_status(sup)
    if as_json:
        _out.print_json(json.dumps([{**asdict(s), "log": str(s.log)} for s in statuses]))
    if not all(s.healthy for s in statuses):
        raise SystemExit(1)


def _print_status(sup: Supervisor) -> list[ServiceStatus]:
    statuses = sup.status()
    table = Table(title="SAND cluster")
    for column in ("service", "pid", "address", "health", "memory"):
        table.add_column(column)
    for s in statuses:
        health = "[green]healthy[/green]" if s.healthy else f"[red]{s.detail}[/red]"
        memory = f"{s.rss_mb:.0f} MB" if s.rss_mb is not None else "-"
        table.add_row(s.name, str(s.pid or "-"), s.address, health, memory)
    _out.print(table)
    return statuses


@click.command(name="config")
@config_option
def show_config(config_file: Path | None) -> None:
    """Print the resolved configuration (after every layer)."""
    config = cluster_config(config_file)
    document = asdict(config)
    _out.print_json(json.dumps(document, default=str))


COMMANDS: list[click.Command] = [up, down, status, show_config]
