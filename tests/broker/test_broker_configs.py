"""Broker configs as DescribeConfigs answers them (issue 11: `kafka-configs --describe --all` showed
listeners=null and no synonyms): Kafka's sources, values and synonyms from the real BrokerConfig."""

from __future__ import annotations

from typing import Any

from broker.broker_configs import DEFAULT_CONFIG, STATIC_BROKER_CONFIG, broker_config_entries, topic_default_synonyms
from broker.config import build_config


def entries(props: dict[str, str], **cli: Any) -> dict[str, dict[str, Any]]:
    config, _ = build_config(props, **cli)
    return {e["name"]: e for e in broker_config_entries(config, include_synonyms=True)}


def synonyms(entry: dict[str, Any]) -> list[tuple[int, str, str | None]]:
    return [(s["source"], s["name"], s["value"]) for s in entry["synonyms"]]


def test_issue_11_listeners_from_the_command_line_are_static() -> None:
    got = entries({}, host="127.0.0.1", port=9093)
    assert got["listeners"]["value"] == "PLAINTEXT://127.0.0.1:9093"
    assert got["listeners"]["config_source"] == STATIC_BROKER_CONFIG
    assert synonyms(got["listeners"]) == [(STATIC_BROKER_CONFIG, "listeners", "PLAINTEXT://127.0.0.1:9093"),
                                          (DEFAULT_CONFIG, "listeners", "PLAINTEXT://:9092")]
    assert got["advertised.listeners"]["value"] is None and got["advertised.listeners"]["synonyms"] == []


def test_defaults_are_default_config_with_their_own_synonym() -> None:
    got = entries({})
    assert got["num.partitions"]["config_source"] == DEFAULT_CONFIG
    assert synonyms(got["num.partitions"]) == [(DEFAULT_CONFIG, "num.partitions", "1")]
    assert got["auto.create.topics.enable"]["value"] == "true"
    assert got["auto.create.topics.enable"]["config_type"] == 1  # BOOLEAN
    assert got["num.partitions"]["config_type"] == 3  # INT


def test_retention_synonyms_follow_kafkas_order_and_drop_rule() -> None:
    # As Kafka with log.retention.ms in server.properties: ms is static, hours keeps its default,
    # and the derived value is not shown where Kafka has null.
    got = entries({"log.retention.ms": "100000", "num.partitions": "3"})
    assert got["log.retention.ms"]["value"] == "100000"
    assert synonyms(got["log.retention.ms"]) == [(STATIC_BROKER_CONFIG, "log.retention.ms", "100000"),
                                                 (DEFAULT_CONFIG, "log.retention.hours", "168")]
    assert synonyms(got["log.retention.hours"]) == [(DEFAULT_CONFIG, "log.retention.hours", "168")]
    assert got["log.retention.minutes"]["value"] is None and got["log.retention.minutes"]["synonyms"] == []
    assert got["num.partitions"]["config_source"] == STATIC_BROKER_CONFIG
    plain = entries({})
    assert plain["log.retention.ms"]["value"] is None and plain["log.retention.ms"]["synonyms"] == []
    assert plain["log.roll.ms"]["value"] is None


def test_synonyms_only_when_asked() -> None:
    config, _ = build_config({"num.partitions": "3"})
    assert all(e["synonyms"] == [] for e in broker_config_entries(config, include_synonyms=False))


def test_topic_configs_inherit_the_broker_synonyms() -> None:
    config, _ = build_config({"log.retention.ms": "100000"})
    assert [(s["source"], s["name"]) for s in topic_default_synonyms(config, "retention.ms", 100000)] == [
        (STATIC_BROKER_CONFIG, "log.retention.ms"), (DEFAULT_CONFIG, "log.retention.hours")]
    assert topic_default_synonyms(config, "cleanup.policy", "delete") == [
        {"name": "log.cleanup.policy", "value": "delete", "source": DEFAULT_CONFIG}]
    assert topic_default_synonyms(config, "segment.jitter.ms", 0) == []


def test_oauthbearer_secrets_are_never_described() -> None:
    """The broker's own client secret (inter-broker OAUTHBEARER) is a password, prefixed or not."""
    found = entries({"sasl.oauthbearer.client.credentials.client.secret": "s3cret",
                     "sasl.oauthbearer.client.credentials.client.id": "broker"})
    secret = found["sasl.oauthbearer.client.credentials.client.secret"]
    assert (secret["value"], secret["is_sensitive"]) == (None, True)
    assert found["sasl.oauthbearer.client.credentials.client.id"]["value"] == "broker"
    assert "s3cret" not in repr(found)
