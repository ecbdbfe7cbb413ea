"""Topics of the suite's Kafka that tests make and fill themselves: the topics of topic
triggers (decision 0034), which the cluster refuses to deploy without."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sand.cluster.config import ClusterConfig


def app_with_topic(source: Path, name: str, directory: Path) -> tuple[Path, str]:
    """A copy of the app at ``source`` named ``name`` whose topic trigger reads its own topic
    ``<name>.orders`` (a topic trigger reads only its app's topics); the copy and the topic."""
    from .tenants import renamed_app

    copy = renamed_app(source, name, directory)
    manifest = copy / "app.yaml"
    topic = f"{name}.orders"
    manifest.write_text(
        manifest.read_text().replace(f"topic: {source.name}.orders", f"topic: {topic}")
    )
    return copy, topic


def create_topic(config: ClusterConfig, topic: str, partitions: int = 1) -> None:
    """Creates ``topic`` on the cluster's Kafka; one that already exists (an earlier run's) is
    fine."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": config.kafka_bootstrap})
    created = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=1)]
    )
    try:
        created[topic].result(timeout=30)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def produce(config: ClusterConfig, topic: str, values: list[Any]) -> None:
    """Sends each of ``values`` to ``topic`` (JSON-encoded, or as is when bytes) and waits until
    the broker holds them all."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": config.kafka_bootstrap, "acks": "all"})
    failures: list[str] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    for value in values:
        raw = value if isinstance(value, bytes) else json.dumps(value).encode()
        producer.produce(topic, raw, on_delivery=delivered)
    left = producer.flush(30)
    assert left == 0 and not failures, f"{left} records not delivered: {failures}"
