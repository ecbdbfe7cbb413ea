"""Cluster commands: up, down, status, kill-host, config."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
import tomllib
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from sand.cli.inputs import STDIN, read_text
from sand.cli.output import emit_json, json_option, stderr, stdout
from sand.cluster import fleet
from sand.cluster.bootstrap import BootstrapError, ensure_admin_token
from sand.cluster.config import ClusterConfig, ConfigError, load_config
from sand.cluster.image import ImageError, ensure_base_image
from sand.cluster.services import PrerequisiteError, host_service_name
from sand.cluster.supervisor import ServiceStatus, StartError, Supervisor, running_config


def _config_from_stdin(ctx: click.Context, param: click.Parameter, value: Path | None) -> Any:
    """``--config -``: the TOML on stdin, in a temporary file that lives as long as the
    command (the config is read more than once)."""
    if value is None or str(value) != STDIN:
        return value
    text = read_text(STDIN, "--config")
    folder = tempfile.TemporaryDirectory(prefix="sand-config-")
    ctx.call_on_close(folder.cleanup)
    path = Path(folder.name) / "stdin.toml"
    path.write_text(text, encoding="utf-8")
    return path


config_option = click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
    default=None,
    callback=_config_from_stdin,
    help="Config file (TOML) layered over the defaults ('-' reads stdin); also $SAND_CONFIG.",
)


def cluster_config(
    config_file: Path | None, hosts: int | None = None, replicated: bool | None = None
) -> ClusterConfig:
    """Load the config or exit 2 with the message (no traceback); ``hosts`` (from
    ``--hosts``) and ``replicated`` (``--replicated``) override every layer."""
    cluster: dict[str, object] = {}
    if hosts is not None:
        cluster["hosts"] = hosts
    if replicated is not None:
        cluster["replicated"] = replicated
    try:
        return load_config(config_file, overrides={"cluster": cluster} if cluster else None)
    except ConfigError as exc:
        raise click.ClickException(f"configuration: {exc}") from exc


def running_cluster_config(config_file: Path | None) -> ClusterConfig:
    """The config of what runs in the state dir: its recorded number of hosts wins."""
    return running_config(cluster_config(config_file))


def supervisor(config: ClusterConfig) -> Supervisor:
    """The supervisor of the cluster ``config`` describes; exits 1 with the message (no
    traceback) when this is no checkout to run one from (a `sand` installed from a wheel)."""
    hooks = {}
    if config.docker_mode != "off":
        first_redis = host_service_name(config.host_plans[0], "redis")
        hooks["dockerd" if config.docker_mode == "managed" else first_redis] = (
            lambda: _import_image(config)
        )
    try:
        return Supervisor(
            config,
            report=lambda line: stderr().print(f"[dim]{escape(line)}[/dim]"),
            after_ready=hooks,
        )
    except PrerequisiteError as exc:
        raise click.ClickException(str(exc)) from None


def _import_image(config: ClusterConfig) -> None:
    started = time.monotonic()
    try:
        if ensure_base_image(config):
            stderr().print(
                f"[dim]imported sandbox image {config.base_image} in "
                f"{time.monotonic() - started:.1f} s[/dim]"
            )
    except ImageError as exc:
        raise StartError("dockerd", str(exc), None) from exc


@click.command()
@config_option
@click.option(
    "--hosts",
    type=int,
    default=None,
    help="SAND hosts on this machine, 1..8 (default: [cluster] hosts, 1); each of "
    "several runs its Redis and agent in a network namespace of its own.",
)
@click.option(
    "--replicated/--no-replicated",
    default=None,
    help="Each host also runs a Kafka broker and a Cassandra node of its own: topics and "
    "the keyspace keep 3 replicas, so the cluster loses nothing when a host dies; needs "
    "--hosts 3 or more (default: [cluster] replicated, false).",
)
@json_option
def up(config_file: Path | None, hosts: int | None, replicated: bool | None, as_json: bool) -> None:
    """Start the cluster and wait until every service is healthy.

    Idempotent: starts only what is not running (a killed host's Redis and agent). Without
    --hosts (or --replicated), and with none configured, keeps the running cluster's."""
    config = cluster_config(config_file, hosts, replicated)
    if hosts is None and replicated is None and not _hosts_configured(config_file):
        config = running_config(config)
    sup = supervisor(config)
    started_at = time.monotonic()
    try:
        started = sup.up()
    except (StartError, PrerequisiteError) as exc:
        stderr().print(f"[bold red]sand up failed[/bold red] — {escape(str(exc))}")
        stderr().print("nothing of this attempt is left running.")
        raise SystemExit(1) from None
    try:
        admin = ensure_admin_token(config)
    except BootstrapError as exc:
        stderr().print(
            "[bold red]sand up: the cluster runs, but has no admin token[/bold red] — "
            + escape(str(exc))
        )
        raise SystemExit(1) from None
    total = time.monotonic() - started_at
    report = {
        "total_s": round(total, 2),
        "services": [asdict(s) for s in started],
    }
    (config.run_dir / "up-report.json").write_text(json.dumps(report, indent=2) + "\n")
    if as_json:
        emit_json({**report, "gateway": config.gateway_url, "admin_token_file": str(admin.path)})
    else:
        _print_status(sup)
    fresh = [s for s in started if not s.already_running]
    verb = "started" if fresh else "already running"
    stderr().print(
        f"cluster {verb}: all healthy in {total:.1f} s; state in {config.state_dir}", markup=False
    )
    stderr().print(f"gateway: {config.gateway_url}", markup=False)
    stderr().print(
        f"web GUI: {config.gateway_url}/ui/ (sign in with a token: the admin's is in {admin.path})",
        soft_wrap=True,
        markup=False,
    )
    made = "new admin token" if admin.created else "admin token"
    stderr().print(  # one line, never wrapped: the command in it is meant to be copied
        f"{made} in {admin.path} (this machine's `sand` uses it); "
        f"to sign in: sand login < {admin.path}",
        soft_wrap=True,
        markup=False,
    )


def _hosts_configured(config_file: Path | None) -> bool:
    """Whether the environment or the config file sets [cluster] hosts."""
    if "SAND_CLUSTER_HOSTS" in os.environ:
        return True
    path = config_file or (
        Path(os.environ["SAND_CONFIG"]) if os.environ.get("SAND_CONFIG") else None
    )
    if path is None:
        return False
    try:
        with path.open("rb") as handle:
            return "hosts" in tomllib.load(handle).get("cluster", {})
    except (OSError, tomllib.TOMLDecodeError):
        return False  # load_config has read it already, or said what is wrong


@click.command()
@config_option
@json_option
def down(config_file: Path | None, as_json: bool) -> None:
    """Stop every service of the cluster; leaves no process of ours running.

    With several hosts, also removes their network namespaces, veths and bridge."""
    config = running_cluster_config(config_file)
    stopped = supervisor(config).down()
    if as_json:
        emit_json({"stopped": list(stopped)})
        return
    stderr().print(f"stopped {', '.join(stopped)}" if stopped else "nothing was running")


@click.command()
@config_option
@json_option
@click.option(
    "--hosts",
    "by_host",
    is_flag=True,
    help='With --json: one document {"hosts": [...], "services": {...}} listing each '
    "host's netns, address, Redis and agent pids and health, and its sandboxes' pids.",
)
def status(config_file: Path | None, as_json: bool, by_host: bool) -> None:
    """Show every service with its pid, address, health and memory. Exit 1 unless all healthy."""
    config = running_cluster_config(config_file)
    sup = supervisor(config)
    if as_json and by_host:
        document = fleet.cluster_status(sup)
        emit_json(document.to_json())
        statuses = [*document.services, *(s for h in document.hosts for s in h.services)]
    elif as_json:
        # a list of services: the format scripts read before hosts existed
        statuses = sup.status()
        emit_json([{**asdict(s), "log": str(s.log)} for s in statuses])
    else:
        statuses = _print_status(sup)
    if not all(s.healthy for s in statuses):
        raise SystemExit(1)


@click.command(name="kill-host")
@config_option
@click.argument("host")
@click.option(
    "--signal",
    "signal_name",
    default="KILL",
    show_default=True,
    help="Signal to send, by name (KILL, TERM, STOP, ...).",
)
@json_option
def kill_host(config_file: Path | None, host: str, signal_name: str, as_json: bool) -> None:
    """Fault injection: signal every process of one host, as if the machine died.

    Every process in the host's network namespace (its Redis, its agent, process
    sandboxes; on a replicated cluster its Kafka broker and Cassandra node) and every
    process of its containers. Shared services and other hosts are left alone; `sand up`
    restarts what the host ran."""
    try:
        sig = signal.Signals["SIG" + signal_name.upper().removeprefix("SIG")]
    except KeyError:
        raise click.BadParameter(f"unknown signal {signal_name!r}", param_hint="--signal") from None
    sup = supervisor(running_cluster_config(config_file))
    try:
        pids = fleet.kill_host(sup, host, sig)
    except KeyError as exc:
        raise click.BadParameter(str(exc.args[0]), param_hint="HOST") from None
    if as_json:
        emit_json({"host": host, "signal": sig.name, "pids": list(pids)})
    elif pids:
        stderr().print(f"sent {sig.name} to {len(pids)} processes of {host}: {pids}", markup=False)
    else:
        stderr().print(f"{host} has no live process", markup=False)


def _print_status(sup: Supervisor) -> list[ServiceStatus]:
    statuses = sup.status()
    table = Table(title="SAND cluster")
    for column in ("service", "pid", "address", "health", "memory"):
        table.add_column(column)
    for s in statuses:
        health = "[green]healthy[/green]" if s.healthy else f"[red]{escape(s.detail)}[/red]"
        memory = f"{s.rss_mb:.0f} MB" if s.rss_mb is not None else "-"
        table.add_row(s.name, str(s.pid or "-"), s.address, health, memory)
    stdout().print(table)
    return statuses


@click.command(name="config")
@config_option
@json_option
def show_config(config_file: Path | None, as_json: bool) -> None:
    """Print the resolved configuration (after every layer) as JSON (--json: the same)."""
    config = cluster_config(config_file)
    # JSON as it is: paths and addresses must not be wrapped or coloured
    emit_json(json.loads(json.dumps(asdict(config), default=str)))


COMMANDS: list[click.Command] = [up, down, status, kill_host, show_config]
