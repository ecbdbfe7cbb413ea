"""Topic commands: the Kafka topics topic triggers read (decision 0034), on the cluster this
machine runs (`sand up`): ``sand topic create NAME``, ``sand topic send NAME VALUE``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from sand.cli.cluster_cmds import config_option, running_cluster_config
from sand.cli.inputs import STDIN, read_text
from sand.cli.output import stdout

# Kafka's rule for topic names; SAND's own topics (sand.*) and Kafka's (__*) are not for users
_TOPIC_HELP = "a topic trigger reads its app's own topics: APP or APP.<name>"
_TIMEOUT_S = 30


def _check_name(name: str) -> str:
    import re

    if not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", name) or name in (".", ".."):
        raise click.BadParameter(
            f"'{name}': a topic name is 1 to 249 letters, digits, '.', '_' or '-'",
            param_hint="NAME",
        )
    if name.startswith(("sand.", "__")):
        raise click.BadParameter(
            f"'{name}': topics starting with 'sand.' or '__' are SAND's and Kafka's own",
            param_hint="NAME",
        )
    return name


def _bootstrap(config_file: Path | None) -> str:
    return running_cluster_config(config_file).kafka_bootstrap


def _kafka() -> Any:
    """The confluent-kafka package (the set-up installs it; a pip-installed SDK may lack it)."""
    try:
        import confluent_kafka
        import confluent_kafka.admin
    except ImportError:
        raise click.ClickException(
            "sand topic needs the confluent-kafka package: pip install confluent-kafka==2.16.1"
        ) from None
    return confluent_kafka


@click.group(name="topic")
def topic() -> None:
    """Kafka topics for topic triggers, on the cluster this machine runs."""


@topic.command(name="create")
@config_option
@click.argument("name")
@click.option("--partitions", type=click.IntRange(1, 1000), default=1, show_default=True)
def create(config_file: Path | None, name: str, partitions: int) -> None:
    """Create topic NAME (one that exists is left as it is)."""
    _check_name(name)
    kafka = _kafka()
    admin = kafka.admin.AdminClient({"bootstrap.servers": _bootstrap(config_file)})
    future = admin.create_topics([kafka.admin.NewTopic(name, num_partitions=partitions)])[name]
    try:
        future.result(timeout=_TIMEOUT_S)
    except kafka.KafkaException as exc:
        error = exc.args[0]
        if error.code() == kafka.KafkaError.TOPIC_ALREADY_EXISTS:
            stdout().print(f"topic {name} exists already")
            return
        raise click.ClickException(f"kafka refused to create {name}: {error.str()}") from None
    stdout().print(f"created topic {name} ({partitions} partition(s)); {_TOPIC_HELP}")


@topic.command(name="send")
@config_option
@click.argument("name")
@click.argument("value", required=False)
@click.option("--key", default=None, help="The record's key (records of one key keep order).")
def send(config_file: Path | None, name: str, value: str | None, key: str | None) -> None:
    """Send VALUE (JSON; '-' or none reads stdin) as one record to topic NAME."""
    _check_name(name)
    text = read_text(STDIN, "VALUE") if value is None or value == STDIN else value
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="VALUE") from None
    producer = _kafka().Producer({"bootstrap.servers": _bootstrap(config_file), "acks": "all"})
    outcome: list[Any] = []
    producer.produce(
        name,
        text.encode(),
        key=key,
        on_delivery=lambda error, message: outcome.append((error, message)),
    )
    producer.flush(_TIMEOUT_S)
    if not outcome:
        raise click.ClickException(f"kafka did not acknowledge the record in {_TIMEOUT_S} s")
    error, message = outcome[0]
    if error is not None:
        raise click.ClickException(f"kafka refused the record: {error.str()}")
    stdout().print(f"sent to {name} partition {message.partition()} offset {message.offset()}")


COMMANDS = (topic,)
