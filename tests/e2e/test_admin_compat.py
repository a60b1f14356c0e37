"""confluent-kafka's AdminClient against the broker: every admin call a user's tool is likely to
make, with the answers checked, and the state they change checked after a restart."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
)

from tests.broker_process import BrokerProcess
from tests.e2e.txn_clients import WAIT_S, txn_producer

pytestmark = pytest.mark.e2e

SETTINGS = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"}


@pytest.fixture
def small_broker(broker_factory: Any) -> BrokerProcess:
    """A broker of the test's own, for the tests that restart it."""
    return broker_factory(SETTINGS)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the tests that do not restart it: each uses topic, group and transactional
    ids of its own. Checked for logged errors and tracebacks when the module ends."""
    broker = BrokerProcess(tmp_path_factory.mktemp("admin") / "data", SETTINGS).start()
    try:
        yield broker
    finally:
        broker.close()


def admin(bs: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bs})


def results(futures: Any) -> Any:
    if isinstance(futures, dict):
        return {k: f.result(WAIT_S) for k, f in futures.items()}
    return futures.result(WAIT_S)


def error_of(future: Any) -> KafkaError:
    with pytest.raises(KafkaException) as info:
        future.result(WAIT_S)
    return info.value.args[0]  # type: ignore[no-any-return]


def produce(bs: str, topic: str, n: int, partition: int = 0, ts0: int | None = None) -> None:
    p = Producer({"bootstrap.servers": bs, "linger.ms": 20})
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, partition=partition,
                  **({"timestamp": ts0 + i} if ts0 is not None else {}))
    assert p.flush(WAIT_S) == 0


def topic_configs(a: AdminClient, topic: str) -> dict[str, ConfigEntry]:
    res = ConfigResource("topic", topic)
    return results(a.describe_configs([res]))[res]  # type: ignore[no-any-return]


def test_topics_create_describe_grow_delete(shared_broker: BrokerProcess) -> None:
    a = admin(shared_broker.bootstrap)
    results(a.create_topics([NewTopic("a1", 3), NewTopic("a2", 1, config={"retention.ms": "60000"})]))
    assert {"a1", "a2"} <= set(a.list_topics(timeout=WAIT_S).topics)
    desc = results(a.describe_topics(TopicCollection(["a1"])))["a1"]
    assert desc.name == "a1" and not desc.is_internal
    assert [p.id for p in desc.partitions] == [0, 1, 2]
    assert all(p.leader.id == 1 and [r.id for r in p.isr] == [1] for p in desc.partitions)
    results(a.create_partitions([NewPartitions("a1", 5)]))
    assert len(a.list_topics("a1", timeout=WAIT_S).topics["a1"].partitions) == 5
    assert error_of(a.create_partitions([NewPartitions("a1", 2)])["a1"]).code() == KafkaError.INVALID_PARTITIONS
    assert error_of(a.create_topics([NewTopic("a1", 1)])["a1"]).code() == KafkaError.TOPIC_ALREADY_EXISTS
    bad = a.create_topics([NewTopic("a3", 1, config={"no.such.config": "1"})])["a3"]
    assert error_of(bad).code() == KafkaError.INVALID_CONFIG
    results(a.delete_topics(["a2"]))
    assert "a2" not in a.list_topics(timeout=WAIT_S).topics
    assert error_of(a.delete_topics(["a2"])["a2"]).code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_describe_and_alter_topic_configs_survive_restart(small_broker: BrokerProcess) -> None:
    a = admin(small_broker.bootstrap)
    results(a.create_topics([NewTopic("c1", 1, config={"retention.ms": "60000"})]))
    entries = topic_configs(a, "c1")
    assert entries["retention.ms"].value == "60000"
    assert entries["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["cleanup.policy"].source == ConfigSource.DEFAULT_CONFIG.value

    # Legacy AlterConfigs replaces the whole set: retention.ms goes back to the default.
    with pytest.deprecated_call():
        results(a.alter_configs([ConfigResource("topic", "c1", set_config={"retention.bytes": "1048576"})]))
    entries = topic_configs(a, "c1")
    assert entries["retention.bytes"].value == "1048576"
    assert entries["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    ops = [ConfigEntry("retention.ms", "120000", incremental_operation=AlterConfigOpType.SET),
           ConfigEntry("retention.bytes", None, incremental_operation=AlterConfigOpType.DELETE),
           ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)]
    results(a.incremental_alter_configs([ConfigResource("topic", "c1", incremental_configs=ops)]))
    small_broker.restart()
    a = admin(small_broker.bootstrap)
    entries = topic_configs(a, "c1")
    assert entries["retention.ms"].value == "120000"
    assert entries["retention.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert entries["cleanup.policy"].value == "delete,compact"

    subtract = [ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT)]
    results(a.incremental_alter_configs([ConfigResource("topic", "c1", incremental_configs=subtract)]))
    assert topic_configs(a, "c1")["cleanup.policy"].value == "compact"


def test_alter_configs_refusals(shared_broker: BrokerProcess) -> None:
    a = admin(shared_broker.bootstrap)
    results(a.create_topics([NewTopic("r1", 1)]))

    def incremental(res: ConfigResource, **kw: Any) -> KafkaError:
        return error_of(a.incremental_alter_configs([res], **kw)[res])

    set_op = AlterConfigOpType.SET
    broker_res = ConfigResource("broker", "1", incremental_configs=[  # not a dynamic broker config
        ConfigEntry("num.partitions", "3", incremental_operation=set_op)])
    assert incremental(broker_res).code() == KafkaError.INVALID_REQUEST
    unknown = ConfigResource("topic", "nope", incremental_configs=[
        ConfigEntry("retention.ms", "1000", incremental_operation=set_op)])
    assert incremental(unknown).code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    bad_value = ConfigResource("topic", "r1", incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=set_op)])
    assert incremental(bad_value).code() == KafkaError.INVALID_CONFIG
    append_int = ConfigResource("topic", "r1", incremental_configs=[
        ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.APPEND)])
    assert incremental(append_int).code() == KafkaError.INVALID_CONFIG
    # validate_only checks a good change and leaves the topic alone.
    ok = ConfigResource("topic", "r1", incremental_configs=[
        ConfigEntry("retention.ms", "1000", incremental_operation=set_op)])
    results(a.incremental_alter_configs([ok], validate_only=True))
    assert topic_configs(a, "r1")["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value


@pytest.mark.parametrize("name", ["message.timestamp.difference.max.ms", "message.format.version",
                                  "message.downconversion.enable"])
def test_topic_configs_kafka_4_removed_are_unknown(shared_broker: BrokerProcess, name: str) -> None:
    """Kafka 4's LogConfig no longer defines these: CreateTopics and the config APIs refuse them
    with INVALID_CONFIG ("Unknown topic config name"). eosbroker created the topic, then failed the
    CreateTopics answer with UNKNOWN_SERVER_ERROR on the config having no default (KafkaJS's
    produce.spec "request to a topic with max timestamp difference configured")."""
    a = admin(shared_broker.bootstrap)
    old, plain = f"old-{name}", f"plain-{name}"  # topics of this case's own on the shared broker
    value = "false" if name == "message.downconversion.enable" else "604800000"
    if name == "message.format.version":
        value = "3.0"
    created = a.create_topics([NewTopic(old, 1, config={name: value})])[old]
    assert error_of(created).code() == KafkaError.INVALID_CONFIG
    assert old not in a.list_topics(timeout=WAIT_S).topics
    results(a.create_topics([NewTopic(plain, 1)]))
    res = ConfigResource("topic", plain, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
    assert error_of(a.incremental_alter_configs([res])[res]).code() == KafkaError.INVALID_CONFIG
    assert name not in topic_configs(a, plain)


def test_delete_records_moves_log_start_durably(small_broker: BrokerProcess) -> None:
    bs = small_broker.bootstrap
    a = admin(bs)
    # Small segments so that DeleteRecords also drops whole segment files.
    results(a.create_topics([NewTopic("d1", 1, config={"segment.bytes": "1024"}),
                             NewTopic("d2", 1, config={"cleanup.policy": "compact"})]))
    produce(bs, "d1", 100)
    deleted = results(a.delete_records([TopicPartition("d1", 0, 40)]))
    assert [d.low_watermark for d in deleted.values()] == [40]
    seg_dir = small_broker.data_dir / "d1-0"
    assert min(int(p.stem) for p in seg_dir.glob("*.log")) <= 40 < 100
    assert earliest(a, "d1") == 40

    small_broker.restart()  # SIGKILL: the new start must already be on disk
    a = admin(bs)  # a fresh client: librdkafka fails leader look-ups at once while reconnecting
    assert earliest(a, "d1") == 40
    assert first_offset_consumed(bs, "d1") == 40
    # Offsets below the new start are out of range for fetches.
    c = Consumer({"bootstrap.servers": bs, "group.id": "dr", "auto.offset.reset": "error"})
    c.assign([TopicPartition("d1", 0, 10)])
    assert poll_error(c).code() == KafkaError._AUTO_OFFSET_RESET
    c.close()

    # An older offset changes nothing; -1 means the high watermark; past it is out of range.
    assert [d.low_watermark for d in results(a.delete_records([TopicPartition("d1", 0, 5)])).values()] == [40]
    assert [d.low_watermark for d in results(a.delete_records([TopicPartition("d1", 0, -1)])).values()] == [100]
    past = a.delete_records([TopicPartition("d1", 0, 500)])
    assert error_of(next(iter(past.values()))).code() == KafkaError.OFFSET_OUT_OF_RANGE
    compacted = a.delete_records([TopicPartition("d2", 0, 0)])
    assert error_of(next(iter(compacted.values()))).code() == KafkaError.POLICY_VIOLATION
    small_broker.restart(kill=False)
    a = admin(bs)
    assert earliest(a, "d1") == 100 == latest(a, "d1")


def earliest(a: AdminClient, topic: str) -> int:
    return list(results(a.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()})).values())[0].offset


def latest(a: AdminClient, topic: str) -> int:
    return list(results(a.list_offsets({TopicPartition(topic, 0): OffsetSpec.latest()})).values())[0].offset


def first_offset_consumed(bs: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bs, "group.id": f"first-{time.monotonic_ns()}",
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    try:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                return m.offset()  # type: ignore[no-any-return]
        raise AssertionError("nothing consumed")
    finally:
        c.close()


def poll_error(c: Consumer) -> KafkaError:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is not None:
            return m.error()
        assert m is None, "a record below the log start offset was returned"
    raise AssertionError("no error reported")


def test_list_offsets_specs_at_both_isolation_levels(shared_broker: BrokerProcess) -> None:
    bs = shared_broker.bootstrap
    a = admin(bs)
    results(a.create_topics([NewTopic("o1", 1)]))
    produce(bs, "o1", 5, ts0=1_000)  # offsets 0-4, timestamps 1000-1004, one batch
    p = txn_producer(bs, "o1-txn")
    p.begin_transaction()
    for i in range(3):  # offsets 5-7 in an open transaction, timestamps 2000-2002
        p.produce("o1", value=b"t", partition=0, timestamp=2_000 + i)
    assert p.flush(WAIT_S) == 0

    def lookup(spec: OffsetSpec, level: IsolationLevel) -> tuple[int, int]:
        info = results(a.list_offsets({TopicPartition("o1", 0): spec}, isolation_level=level))
        r = list(info.values())[0]
        return r.offset, r.timestamp

    uncommitted, committed = IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED
    assert lookup(OffsetSpec.earliest(), committed)[0] == 0
    assert lookup(OffsetSpec.latest(), uncommitted)[0] == 8
    assert lookup(OffsetSpec.latest(), committed)[0] == 5  # the last stable offset
    # The exact record inside a batch, as Kafka finds it.
    assert lookup(OffsetSpec.for_timestamp(1_002), uncommitted) == (2, 1_002)
    assert lookup(OffsetSpec.for_timestamp(1_002), committed) == (2, 1_002)
    assert lookup(OffsetSpec.for_timestamp(2_001), uncommitted) == (6, 2_001)
    assert lookup(OffsetSpec.for_timestamp(2_001), committed)[0] == -1
    assert lookup(OffsetSpec.for_timestamp(9_999), uncommitted)[0] == -1
    assert lookup(OffsetSpec.max_timestamp(), uncommitted) == (7, 2_002)
    assert lookup(OffsetSpec.max_timestamp(), committed)[0] == -1
    p.commit_transaction(WAIT_S)
    # EndTxn answers once the commit is decided; the marker that moves the LSO follows.
    deadline = time.monotonic() + WAIT_S
    while lookup(OffsetSpec.latest(), committed)[0] != 9 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lookup(OffsetSpec.latest(), committed)[0] == 9  # after the commit marker
    assert lookup(OffsetSpec.for_timestamp(2_001), committed) == (6, 2_001)


def test_consumer_group_admin(small_broker: BrokerProcess) -> None:
    bs = small_broker.bootstrap
    a = admin(bs)
    results(a.create_topics([NewTopic("g1", 2)]))
    produce(bs, "g1", 20, partition=0)
    c = Consumer({"bootstrap.servers": bs, "group.id": "grp", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "client.id": "grp-client"})
    c.subscribe(["g1"])
    seen = 0
    deadline = time.monotonic() + WAIT_S
    while seen < 20 and time.monotonic() < deadline:
        m = c.poll(0.5)
        seen += m is not None and m.error() is None
    c.commit(asynchronous=False)

    listed = results(a.list_consumer_groups())
    assert [(g.group_id, g.state) for g in listed.valid if g.group_id == "grp"] == [("grp", ConsumerGroupState.STABLE)]
    desc = results(a.describe_consumer_groups(["grp"]))["grp"]
    assert desc.state == ConsumerGroupState.STABLE and desc.coordinator.id == 1
    assert [m.client_id for m in desc.members] == ["grp-client"]
    assert sorted(tp.partition for tp in desc.members[0].assignment.topic_partitions) == [0, 1]
    # Offsets of a live group cannot be altered (Kafka: UNKNOWN_MEMBER_ID).
    c.close()

    def offsets() -> dict[int, int]:
        got = results(a.list_consumer_group_offsets([ConsumerGroupTopicPartitions("grp")]))["grp"]
        return {tp.partition: tp.offset for tp in got.topic_partitions}

    assert offsets()[0] == 20
    results(a.alter_consumer_group_offsets([ConsumerGroupTopicPartitions("grp", [TopicPartition("g1", 0, 7)])]))
    assert offsets()[0] == 7
    small_broker.restart()
    a = admin(bs)
    assert offsets()[0] == 7
    results(a.delete_consumer_groups(["grp"]))
    assert "grp" not in {g.group_id for g in results(a.list_consumer_groups()).valid}


def test_describe_cluster(shared_broker: BrokerProcess) -> None:
    a = admin(shared_broker.bootstrap)
    cluster = results(a.describe_cluster())
    assert cluster.controller.id == 1
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(1, "127.0.0.1", shared_broker.port)]
    assert cluster.cluster_id


def test_acl_calls_report_security_disabled(shared_broker: BrokerProcess) -> None:
    # As Kafka answers without an authorizer: tools learn ACLs are off, not that the API is missing.
    a = admin(shared_broker.bootstrap)
    any_filter = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    # librdkafka drops DescribeAcls' top-level error code: an empty listing is all it shows
    # (kafka-python sees SECURITY_DISABLED: test_admin_compat_kafka_python.py).
    assert results(a.describe_acls(any_filter)) == []
    binding = AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:a", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    assert error_of(a.create_acls([binding])[binding]).code() == KafkaError.SECURITY_DISABLED
    assert error_of(a.delete_acls([any_filter])[any_filter]).code() == KafkaError.SECURITY_DISABLED
