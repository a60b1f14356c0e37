"""Group configs (GROUP config resources, KIP-848): Kafka's keys, checks and sources, stored with
the dynamic configs, and a group's own heartbeat interval and session timeout in force."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from broker.config import BrokerConfig
from broker.dynamic_config import DynamicBrokerConfig
from broker.group_configs import GROUP_KEYS, incremental, validate
from broker.state import BrokerState
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.broker_config_store import FileBrokerConfigStore
from tests.broker.test_admin_handlers import call

E = ErrorCode
BROKER = BrokerConfig()


@pytest.mark.parametrize(("configs", "message"), [
    ({"consumer.session.timeout.ms": "44999"},
     "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
    ({"consumer.session.timeout.ms": "60001"},
     "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"),
    ({"consumer.heartbeat.interval.ms": "4999"},
     "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"),
    ({"consumer.heartbeat.interval.ms": "abc"},
     "Invalid value abc for configuration consumer.heartbeat.interval.ms: Not a number of type INT"),
    ({"consumer.heartbeat.interval.ms": "0"},
     "Invalid value 0 for configuration consumer.heartbeat.interval.ms: Value must be at least 1"),
    ({"share.isolation.level": "dirty"},
     "Invalid value dirty for configuration share.isolation.level: String must be one of: read_committed, "
     "read_uncommitted"),
    ({"consumer.assignor.offload.enable": "yes"},
     "Invalid value yes for configuration consumer.assignor.offload.enable: Expected value to be either true or false"),
    ({"group.id": "x"}, "Unknown group config name: group.id"),
    ({"consumer.session.timeout.ms": None}, "Null value not supported for group configs: consumer.session.timeout.ms"),
])
def test_kafkas_checks(configs: dict[str, str | None], message: str) -> None:
    with pytest.raises(KafkaError) as refused:
        validate("g", configs, BROKER)
    assert (refused.value.code, refused.value.message) == (E.invalid_config, message)


def test_the_session_must_outlast_the_heartbeat_and_the_range_follows_the_broker() -> None:
    wide = BrokerConfig(group_consumer_min_session_timeout_ms=1000, group_consumer_min_heartbeat_interval_ms=1000)
    with pytest.raises(KafkaError, match="consumer.session.timeout.ms must be greater than "
                                         "consumer.heartbeat.interval.ms"):
        validate("g", {"consumer.session.timeout.ms": "5000"}, wide)
    assert validate("g", {"consumer.session.timeout.ms": "6000", "consumer.heartbeat.interval.ms": "1000"}, wide) \
        == {"consumer.session.timeout.ms": "6000", "consumer.heartbeat.interval.ms": "1000"}
    with pytest.raises(KafkaError, match="Group name must not be empty"):
        validate("", {}, BROKER)


def test_incremental_sets_and_deletes_and_refuses_list_operations() -> None:
    own = incremental("g", {"consumer.session.timeout.ms": "50000"},
                      [("consumer.heartbeat.interval.ms", 0, "6000"), ("consumer.session.timeout.ms", 1, None)], BROKER)
    assert own == {"consumer.heartbeat.interval.ms": "6000"}
    with pytest.raises(KafkaError, match="Can't APPEND to key consumer.session.timeout.ms because its type is "
                                         "not LIST"):
        incremental("g", {}, [("consumer.session.timeout.ms", 2, "1")], BROKER)


@pytest.fixture
async def state(broker_state, tmp_path: Path) -> BrokerState:  # type: ignore[no-untyped-def]
    state: BrokerState = await broker_state(t=1)

    async def apply(config: BrokerConfig, defaults: Mapping[str, object]) -> None:
        state.config = config

    state.dynamic_config = DynamicBrokerConfig(state.config, FileBrokerConfigStore(tmp_path), apply)
    return state


def _group(name: str, *ops: tuple[str, int, str | None]) -> dict[str, Any]:
    return {"resource_type": 32, "resource_name": name,
            "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]}


async def test_set_describe_reopen_and_delete(state: BrokerState, tmp_path: Path) -> None:
    r = await call(state, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=[
        _group("my-group", ("consumer.session.timeout.ms", 0, "50000")),
        _group("other", ("consumer.session.timeout.ms", 0, "1")), _group("", ("consumer.session.timeout.ms", 0, "1"))])
    assert [(x.error_code, x.error_message) for x in r.responses] == [
        (E.none, None),
        (E.invalid_config, "consumer.session.timeout.ms must be greater than or equal to "
                           "group.consumer.min.session.timeout.ms"),
        (E.invalid_request, "Group name must not be empty")]
    d = await call(state, ApiKey.DESCRIBE_CONFIGS, 4, include_synonyms=True, include_documentation=False, resources=[
        {"resource_type": 32, "resource_name": "my-group", "configuration_keys": None}])
    configs = {c.name: (c.value, c.config_source, c.config_type) for c in d.results[0].configs}
    assert configs.keys() == GROUP_KEYS.keys() - {f"{kind}.assignor.offload.enable"  # Kafka's internal keys
                                                  for kind in ("consumer", "share", "streams")}
    assert configs["consumer.session.timeout.ms"] == ("50000", 8, 3)
    assert configs["consumer.heartbeat.interval.ms"] == ("5000", 5, 3)
    synonyms = {c.name: [(s.name, s.value, s.source) for s in c.synonyms] for c in d.results[0].configs}
    assert synonyms["consumer.session.timeout.ms"] == [("consumer.session.timeout.ms", "50000", 8),
                                                       ("group.consumer.session.timeout.ms", "45000", 5)]
    assert synonyms["share.auto.offset.reset"] == [("share.auto.offset.reset", "latest", 5)]
    reopened = FileBrokerConfigStore(tmp_path)
    reopened.load()
    assert reopened.configs("group:my-group") == {"consumer.session.timeout.ms": "50000"}
    r = await call(state, ApiKey.ALTER_CONFIGS, 2, validate_only=False, resources=[
        {"resource_type": 32, "resource_name": "my-group", "configs": []}])
    assert r.responses[0].error_code == E.none
    assert state.dynamic_config is not None and state.dynamic_config.group_configs("my-group") == {}


async def test_list_config_resources_lists_groups_with_configs_brokers_and_topics(state: BrokerState) -> None:
    r = await call(state, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=[
        _group("my-group", ("consumer.session.timeout.ms", 0, "50000"))])
    assert r.responses[0].error_code == E.none
    listed = await call(state, ApiKey.LIST_CONFIG_RESOURCES, 1, resource_types=[])
    assert listed.error_code == E.none
    assert [(c.resource_type, c.resource_name) for c in listed.config_resources] == [
        (32, "my-group"), (8, "1"), (4, "1"), (2, "t")]  # Kafka's order: groups, (client metrics), loggers, ...
    only = await call(state, ApiKey.LIST_CONFIG_RESOURCES, 1, resource_types=[2, 32, 2])
    assert [(c.resource_type, c.resource_name) for c in only.config_resources] == [(32, "my-group"), (2, "t")]
    # eosbroker keeps no client-metrics resources (no client telemetry): v0 asks for those only
    assert (await call(state, ApiKey.LIST_CONFIG_RESOURCES, 0)).config_resources == ()
    assert (await call(state, ApiKey.LIST_CONFIG_RESOURCES, 1, resource_types=[16])).config_resources == ()
    unknown = await call(state, ApiKey.LIST_CONFIG_RESOURCES, 1, resource_types=[2, 1])
    assert (unknown.error_code, unknown.config_resources) == (E.unsupported_version, ())


async def test_client_metrics_resources_are_refused_saying_why(state: BrokerState) -> None:
    why = ("eosbroker keeps no client-metrics resources: it has no client telemetry (KIP-714: "
           "GetTelemetrySubscriptions, PushTelemetry)")
    d = await call(state, ApiKey.DESCRIBE_CONFIGS, 4, include_synonyms=False, include_documentation=False,
                   resources=[{"resource_type": 16, "resource_name": "cm1", "configuration_keys": None}])
    assert (d.results[0].error_code, d.results[0].error_message) == (E.invalid_request, why)
    i = await call(state, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=[
        {"resource_type": 16, "resource_name": "cm1",
         "configs": [{"name": "interval.ms", "config_operation": 0, "value": "1000"}]}])
    a = await call(state, ApiKey.ALTER_CONFIGS, 2, validate_only=False, resources=[
        {"resource_type": 16, "resource_name": "cm1", "configs": [{"name": "interval.ms", "value": "1000"}]}])
    for r in (i, a):
        assert (r.responses[0].error_code, r.responses[0].error_message) == (E.invalid_request,
                                                                            f"{why}; nothing was changed")


async def test_documentation_when_asked_and_null_for_loggers_and_unknown_names(state: BrokerState) -> None:
    resources = [{"resource_type": 32, "resource_name": "g", "configuration_keys": None},
                 {"resource_type": 4, "resource_name": "1",
                  "configuration_keys": ["num.partitions", "log.retention.ms", "broker.id"]},
                 {"resource_type": 8, "resource_name": "1", "configuration_keys": None}]
    plain = await call(state, ApiKey.DESCRIBE_CONFIGS, 4, include_synonyms=False, include_documentation=False,
                       resources=resources)
    assert {c.documentation for r in plain.results for c in r.configs} == {None}
    d = await call(state, ApiKey.DESCRIBE_CONFIGS, 4, include_synonyms=False, include_documentation=True,
                   resources=resources)
    group, broker, loggers = ({c.name: c.documentation for c in r.configs} for r in d.results)
    assert group["consumer.session.timeout.ms"] == (
        "Group config, int; within the range the broker's group.consumer.min.session.timeout.ms and "
        "group.consumer.max.session.timeout.ms allow; without a value of its own, the broker's default. "
        "Set with kafka-configs --alter --entity-type groups.")
    assert broker["num.partitions"] == "Int, default 1; at least 1. Set in server.properties or with --set; " \
                                       "read at start-up."
    assert broker["log.retention.ms"].endswith("Changes at run time, per broker or cluster-wide "
                                               "(kafka-configs --alter --entity-type brokers).")
    assert "broker.id" not in broker or broker["broker.id"] == "Another name for node.id."
    assert loggers and set(loggers.values()) == {None}
