"""`sand topic create|send`: bad names and values are refused before Kafka is asked."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from sand.cli import cli


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("sand.hello.greet", "SAND's and Kafka's own"),
        ("__consumer_offsets", "SAND's and Kafka's own"),
        ("orders incoming", "1 to 249 letters"),
        ("..", "1 to 249 letters"),
        ("x" * 250, "1 to 249 letters"),
    ],
)
def test_create_badName_refusedNamingTheRule(name: str, rule: str) -> None:
    result = CliRunner().invoke(cli, ["topic", "create", name])
    assert result.exit_code == 2, result.output
    assert rule in result.output and "NAME" in result.output


def test_send_valueNotJson_refusedBeforeKafka() -> None:
    result = CliRunner().invoke(cli, ["topic", "send", "orders.incoming", "{not json"])
    assert result.exit_code == 2, result.output
    assert "not JSON" in result.output and "VALUE" in result.output


def test_send_readsStdin_andChecksIt() -> None:
    result = CliRunner().invoke(cli, ["topic", "send", "orders.incoming", "-"], input="[1,")
    assert result.exit_code == 2, result.output
    assert "not JSON" in result.output


def test_withoutConfluentKafka_saysWhatToInstall(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pip-installed SDK may lack confluent-kafka: a clear message, no traceback."""
    import sys

    monkeypatch.setitem(sys.modules, "confluent_kafka", None)
    result = CliRunner().invoke(cli, ["topic", "create", "shop.orders"])
    assert result.exit_code == 1, result.output
    assert "pip install confluent-kafka" in result.output
    assert "Traceback" not in result.output
