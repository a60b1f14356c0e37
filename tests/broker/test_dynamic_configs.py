"""Dynamic broker configs (AlterConfigs / IncrementalAlterConfigs on BROKER resources): Kafka's
checks of a change (broker/dynamic_keys.py), the precedence of the layers, the store in the data
dir, and the handlers in process: DescribeConfigs sources, a log default reaching a topic live."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from broker.authorizer.standard import StandardAuthorizer
from broker.broker_configs import broker_config_entries
from broker.config import BrokerConfig, build_config
from broker.dispatch import HANDLERS
from broker.dynamic_config import DynamicBrokerConfig, effective_config, log_defaults
from broker.dynamic_keys import incremental_broker_alter, validate_dynamic, validate_thread_counts
from broker.handler import RequestContext
from broker.principal import KafkaPrincipal, Session
from broker.state import BrokerState
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import RequestHeader, request_schema
from protocol.errors import ErrorCode, KafkaError
from storage.acl_store import AclFileStore
from storage.api import TopicPartition
from storage.broker_config_store import BROKER_CONFIGS_FILE, FileBrokerConfigStore
from tests.broker.test_admin_handlers import call, entity

E = ErrorCode


@pytest.mark.parametrize(("props", "per_broker", "message"), [
    ({"log.dirs": "/x", "num.partitions": "3"}, True, "Cannot update these configs dynamically: [log.dirs, "
                                                      "num.partitions]"),
    ({"ssl.keystore.location": "/k"}, True, "These security configs can be dynamically updated only per-listener "
                                            "using the listener prefix: [ssl.keystore.location]"),
    ({"listener.name.plaintext.ssl.keystore.location": "/k"}, False,
     "Cannot update these configs at default cluster level, broker id must be specified: "
     "[listener.name.plaintext.ssl.keystore.location]"),
    ({"log.retention.ms": "soon"}, True, "Invalid value soon for configuration log.retention.ms: Not a number of "
                                         "type LONG"),
    ({"log.retention.ms": "0"}, False, "log.retention.ms must be unlimited (-1) or, greater than or equal to 1"),
    ({"log.cleanup.policy": "sometimes"}, False, "Invalid value sometimes for configuration log.cleanup.policy"),
    ({"num.io.threads": "many"}, False, "Invalid value many for configuration num.io.threads: Not a number of type "
                                        "INT"),
])
def test_kafka_refuses_these_changes(props: dict[str, str], per_broker: bool, message: str) -> None:
    with pytest.raises(KafkaError) as exc:
        validate_dynamic(props, per_broker)
    assert exc.value.code == E.invalid_request
    assert message in exc.value.message


def test_kafka_takes_these_changes() -> None:
    validate_dynamic({"log.retention.ms": "60000", "log.cleanup.policy": "compact,delete", "num.io.threads": "4",
                      "max.connections": "100", "my.plugin.setting": "x"}, per_broker=False)
    validate_dynamic({"listener.name.plaintext.ssl.keystore.location": "/k", "ssl.cipher.suites": "A"},
                     per_broker=True)


@pytest.mark.parametrize(("old", "new", "message"), [
    ({}, {"num.io.threads": "3"}, "Dynamic thread count update validation failed for num.io.threads=3, value should "
                                  "be at least half the current value 8"),
    ({"num.io.threads": "4"}, {"num.io.threads": "9"}, "value should not be greater than double the current value 4"),
    ({}, {"log.cleaner.threads": "5"}, "Log cleaner threads cannot be increased to more than double the current "
                                       "value 2"),
    ({}, {"log.cleaner.threads": "0"}, "Log cleaner threads should be at least 1"),
])
def test_kafka_refuses_thread_counts_beyond_half_or_double(old: dict[str, str], new: dict[str, str],
                                                           message: str) -> None:
    with pytest.raises(KafkaError, match=message.replace("(", r"\(")):
        validate_thread_counts(old, new, cleaner_threads=2)
    validate_thread_counts({}, {"num.io.threads": "16", "log.cleaner.threads": "4"}, cleaner_threads=2)


def test_incremental_operations_on_broker_configs() -> None:
    defaults = {"log.cleanup.policy": "delete"}
    out = incremental_broker_alter({"log.retention.ms": "5", "message.max.bytes": "9"},
                                   [("log.retention.ms", 1, None), ("log.cleanup.policy", 2, "compact"),
                                    ("log.segment.bytes", 0, "4096")], defaults)
    assert out == {"message.max.bytes": "9", "log.cleanup.policy": "delete,compact", "log.segment.bytes": "4096"}
    assert incremental_broker_alter(out, [("log.cleanup.policy", 3, "delete")], defaults)["log.cleanup.policy"] \
        == "compact"
    with pytest.raises(KafkaError) as exc:
        incremental_broker_alter({}, [("log.segment.bytes", 2, "1")], defaults)
    assert exc.value.code == E.invalid_config
    assert exc.value.message == "Config value append is not allowed for config key: log.segment.bytes"


def test_per_broker_wins_over_default_over_static() -> None:
    static, _ = build_config({"log.retention.ms": "1000", "log.segment.bytes": "2000", "message.max.bytes": "3000"})
    config = effective_config(static, {"log.retention.ms": "10", "log.segment.bytes": "20",
                                       "log.cleanup.policy": "compact"}, {"log.retention.ms": "100"})
    assert (config.log_retention_ms, config.log_segment_bytes, config.message_max_bytes) == (100, 20, 3000)
    defaults = log_defaults(config, {"log.cleanup.policy": "compact"})
    assert (defaults["retention.ms"], defaults["cleanup.policy"]) == (100, "compact")


def test_describe_sources_and_synonyms_in_kafka_order() -> None:
    static, _ = build_config({"log.retention.ms": "1000"})
    layers = ({"log.retention.ms": "100", "listener.name.x.ssl.key.password": "s"},
              {"log.retention.ms": "10", "num.io.threads": "4"})
    entries = {e["name"]: e for e in broker_config_entries(static, True, layers)}
    retention = entries["log.retention.ms"]
    assert (retention["value"], retention["config_source"], retention["read_only"]) == ("100", 2, False)
    assert [(s["source"], s["value"]) for s in retention["synonyms"]] == [(2, "100"), (3, "10"), (4, "1000"),
                                                                    (5, "168")]
    assert entries["num.partitions"]["read_only"] is True
    assert (entries["num.io.threads"]["value"], entries["num.io.threads"]["config_source"]) == ("4", 3)
    secret = entries["listener.name.x.ssl.key.password"]
    assert (secret["value"], secret["is_sensitive"], secret["config_source"]) == (None, True, 2)
    default_only = broker_config_entries(static, True, layers, per_broker=False)
    assert [(e["name"], e["value"], [s["source"] for s in e["synonyms"]]) for e in default_only] == [
        ("log.retention.ms", "10", [3]), ("num.io.threads", "4", [3])]


async def test_the_store_survives_a_reopen_and_refuses_a_damaged_file(tmp_path: Path) -> None:
    store = FileBrokerConfigStore(tmp_path)
    await store.replace("", {"log.retention.ms": "5"})
    await store.replace("1", {"message.max.bytes": "7"})
    await store.replace("1", {})
    again = FileBrokerConfigStore(tmp_path)
    again.load()
    assert (again.configs(""), again.configs("1")) == ({"log.retention.ms": "5"}, {})
    assert again.entities() == [""]  # an emptied entity is gone
    (tmp_path / BROKER_CONFIGS_FILE).write_text("{not json")
    with pytest.raises(ValueError, match="unreadable"):
        FileBrokerConfigStore(tmp_path).load()


@pytest.fixture
async def state(broker_state, tmp_path: Path) -> BrokerState:  # type: ignore[no-untyped-def]
    state: BrokerState = await broker_state(t=2)

    async def apply(config: BrokerConfig, defaults: Mapping[str, object]) -> None:
        state.config = config
        await state.logs.set_log_defaults(defaults)

    store = FileBrokerConfigStore(tmp_path)
    state.dynamic_config = DynamicBrokerConfig(state.config, store, apply)
    return state


def _broker(name: str, *ops: tuple[str, int, str | None]) -> dict[str, Any]:
    return {"resource_type": 4, "resource_name": name,
            "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]}


async def _describe(state: BrokerState, kind: int, name: str, *keys: str) -> Any:
    r = await call(state, ApiKey.DESCRIBE_CONFIGS, 4, include_synonyms=True, include_documentation=False,
                   resources=[{"resource_type": kind, "resource_name": name, "configuration_keys": list(keys)}])
    return r.results[0]


async def test_a_default_reaches_topics_live_and_per_broker_wins(state: BrokerState) -> None:
    r = await call(state, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=[
        _broker("", ("log.retention.ms", 0, "60000"), ("log.cleanup.policy", 0, "compact")),
        _broker("1", ("message.max.bytes", 0, "2048"))])
    assert [x.error_code for x in r.responses] == [E.none, E.none]
    plog = state.logs.get_log(TopicPartition("t", 1))
    assert (plog.config.retention_ms, plog.config.cleanup_policy, plog.config.max_message_bytes) == \
        (60000, "compact", 2048)
    topic = await _describe(state, 2, "t", "retention.ms", "cleanup.policy")
    assert [(c.name, c.value, c.config_source) for c in topic.configs] == [
        ("cleanup.policy", "compact", 3), ("retention.ms", "60000", 3)]
    await call(state, ApiKey.ALTER_CONFIGS, 2, validate_only=False, resources=[
        {"resource_type": 4, "resource_name": "1", "configs": [{"name": "log.retention.ms", "value": "7000"}]}])
    assert plog.config.retention_ms == 7000 and plog.config.max_message_bytes == 1048588  # replaced
    broker = await _describe(state, 4, "1", "log.retention.ms")
    assert [(s.source, s.value) for s in broker.configs[0].synonyms] == [(2, "7000"), (3, "60000"), (5, "168")]
    reopened = FileBrokerConfigStore(Path(state.config.log_dirs))
    reopened.load()
    assert reopened.configs("1") == {"log.retention.ms": "7000"}


async def test_append_starts_from_kafkas_default(state: BrokerState) -> None:
    await call(state, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False,
               resources=[_broker("", ("log.cleanup.policy", 2, "compact"))])
    assert state.dynamic_config is not None
    assert state.dynamic_config.layers()[1] == {"log.cleanup.policy": "delete,compact"}


async def test_refusals_and_validate_only(state: BrokerState) -> None:
    r = await call(state, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=True, resources=[
        _broker("", ("log.retention.ms", 0, "60000")), _broker("2", ("log.retention.ms", 0, "1")),
        _broker("one", ("log.retention.ms", 0, "1")), _broker("1", ("log.dirs", 0, "/x"))])
    assert [(x.error_code, x.error_message) for x in r.responses][1:] == [
        (E.invalid_request, "Unexpected broker id, expected 1, but received 2"),
        (E.invalid_request, "Node id must be an integer, but it is: one"),
        (E.invalid_request, "Cannot update these configs dynamically: [log.dirs]")]
    assert r.responses[0].error_code == E.none
    assert state.dynamic_config is not None and state.dynamic_config.layers() == ({}, {})


async def test_broker_configs_need_the_cluster_config_acls(state: BrokerState, tmp_path: Path) -> None:
    """Kafka checks ALTER_CONFIGS / DESCRIBE_CONFIGS on the CLUSTER resource for BROKER resources."""
    state.authorizer = StandardAuthorizer(super_users=frozenset({"User:admin"}), allow_everyone_if_no_acl_found=False,
                                          store=AclFileStore(tmp_path))
    state.authorizer.load()

    async def as_user(name: str, key: ApiKey, version: int, **fields: Any) -> Any:
        who = Session(principal=KafkaPrincipal("User", name), listener_name="PLAINTEXT",
                      security_protocol="PLAINTEXT", client_host="127.0.0.1")
        request = build(request_schema(key, version), fields)
        header = RequestHeader(api_key=key, api_version=version, correlation_id=7, client_id="test")
        return entity(await HANDLERS[key].handle(RequestContext(header=header, broker=state, peer="t", session=who),
                                                 request), key, version)

    alter = {"validate_only": False, "resources": [_broker("", ("log.retention.ms", 0, "60000"))]}
    describe = {"include_synonyms": False, "include_documentation": False,
                "resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": None}]}
    bob = await as_user("bob", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, **alter)
    assert bob.responses[0].error_code == E.cluster_authorization_failed
    assert (await as_user("bob", ApiKey.DESCRIBE_CONFIGS, 4, **describe)).results[0].error_code == \
        E.cluster_authorization_failed
    assert state.dynamic_config is not None and state.dynamic_config.layers() == ({}, {})
    admin = await as_user("admin", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, **alter)
    assert admin.responses[0].error_code == E.none
    assert state.dynamic_config.layers() == ({}, {"log.retention.ms": "60000"})


async def test_concurrent_incremental_changes_all_count(state: BrokerState) -> None:
    keys = ("log.retention.ms", "log.segment.bytes", "message.max.bytes", "log.retention.bytes")
    await asyncio.gather(*(call(state, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False,
                                resources=[_broker("", (key, 0, str(10_000 + i)))]) for i, key in enumerate(keys)))
    assert state.dynamic_config is not None
    assert state.dynamic_config.layers()[1] == {key: str(10_000 + i) for i, key in enumerate(keys)}
