"""Kafka 4.3.1 tools the other tool tests do not run, against the broker: what they print is what
they print against Apache Kafka 4.x, or (for what eosbroker does not have) a clear refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess
from tests.e2e.test_kafka_tools import failing, tool

pytestmark = pytest.mark.e2e


def test_client_metrics_and_config_listings_use_list_config_resources(broker: BrokerProcess) -> None:
    """kafka-client-metrics --list/--describe and kafka-configs --describe of client-metrics list
    the resources with ListConfigResources (KIP-1142) first; before eosbroker answered it they
    failed with "The node does not support LIST_CONFIG_RESOURCES". eosbroker keeps no
    client-metrics resources (no client telemetry, KIP-714): the lists are empty, and creating one
    is refused saying so (it said "resource type 16 is not supported")."""
    assert tool(broker, "kafka-client-metrics", "--list").strip() == ""
    assert tool(broker, "kafka-client-metrics", "--describe").strip() == ""
    assert tool(broker, "kafka-client-metrics", "--describe", "--name", "cm1").strip() == \
        "The client metric resource cm1 doesn't exist and doesn't have dynamic config."
    assert tool(broker, "kafka-configs", "--describe", "--entity-type", "client-metrics").strip() == ""
    refusal = failing(broker, "kafka-client-metrics", "--alter", "--name", "cm1", "--metrics",
                      "org.apache.kafka.producer.", "--interval", "10000")
    assert "InvalidRequestException: eosbroker keeps no client-metrics resources: it has no client telemetry " \
           "(KIP-714: GetTelemetrySubscriptions, PushTelemetry); nothing was changed" in refusal, refusal
    # A group with configs of its own is listed (ListConfigResources' GROUP type) and described.
    tool(broker, "kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", "g1",
         "--add-config", "consumer.session.timeout.ms=50000")
    out = tool(broker, "kafka-configs", "--describe", "--entity-type", "groups")
    assert "Dynamic configs for group g1 are:\n  consumer.session.timeout.ms=50000 sensitive=false " \
           "synonyms={DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000}" in out, out


def test_delegation_tokens_are_refused_as_kafka_refuses_them_on_plaintext(broker: BrokerProcess,
                                                                          tmp_path: Path) -> None:
    """kafka-delegation-tokens failed with "The node does not support CREATE_DELEGATION_TOKEN";
    eosbroker has no tokens and now answers as Kafka with token authentication disabled, which on
    a PLAINTEXT listener is DELEGATION_TOKEN_REQUEST_NOT_ALLOWED."""
    config = tmp_path / "admin.properties"
    config.write_text("")
    for args in (("--describe",), ("--create", "--max-life-time-period", "-1"),
                 ("--renew", "--hmac", "abc", "--renew-time-period", "-1"),
                 ("--expire", "--hmac", "abc", "--expiry-time-period", "-1")):
        out = failing(broker, "kafka-delegation-tokens", "--command-config", str(config), *args)
        assert "UnsupportedByAuthenticationException: Delegation Token requests are not allowed on PLAINTEXT/1-way " \
               "SSL channels and on delegation token authenticated channels." in out, out
