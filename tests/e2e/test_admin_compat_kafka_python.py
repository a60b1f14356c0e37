"""kafka-python's KafkaAdminClient against the broker: the calls it offers for topics, configs,
records, offsets, groups, transactions and the cluster, with the answers checked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.broker_process import BrokerProcess
from tests.e2e.txn_clients import kafka_module

pytestmark = pytest.mark.e2e

kafka = kafka_module()
from kafka.admin import (  # noqa: E402
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ConfigResource,
    ConfigResourceType,
    NewPartitions,
    NewTopic,
    ResourcePatternFilter,
    ResourceType,
)

TP = kafka.TopicPartition
SETTINGS = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"}


@pytest.fixture
def admin(broker_factory: Any) -> Iterator[tuple[BrokerProcess, Any]]:
    broker = broker_factory(SETTINGS)
    client = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    yield broker, client
    client.close()


def produce(bs: str, topic: str, n: int, ts0: int) -> None:
    p = kafka.KafkaProducer(bootstrap_servers=bs, linger_ms=20)
    for i in range(n):
        p.send(topic, b"v%d" % i, partition=0, timestamp_ms=ts0 + i)
    p.flush()
    p.close()


def test_topics_and_configs(admin: tuple[BrokerProcess, Any]) -> None:
    _, a = admin
    a.create_topics([NewTopic("kp1", 2, 1), NewTopic("kp2", 1, 1, topic_configs={"retention.ms": "100000"})])
    assert {"kp1", "kp2"} <= set(a.list_topics())
    (desc,) = a.describe_topics(["kp1"])
    assert desc["name"] == "kp1" and len(desc["partitions"]) == 2
    a.create_partitions({"kp1": NewPartitions(3)})
    pages = a.describe_topic_partitions(["kp1"])
    assert [len(t["partitions"]) for t in pages["topics"]] == [3]

    def configs(filt: str = "all") -> dict[str, Any]:
        got = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp2")], config_filter=filt)
        return got["topic"]["kp2"]  # type: ignore[no-any-return]

    assert configs("modified")["retention.ms"]["value"] == "100000"
    assert configs()["cleanup.policy"]["value"] == "delete"
    a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp2", configs={"retention.ms": "200000"})])
    assert configs()["retention.ms"]["value"] == "200000"
    a.reset_configs([ConfigResource(ConfigResourceType.TOPIC, "kp2", configs={"retention.ms": None})])
    assert configs()["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
    broker_configs = a.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
    assert "log.dirs" in broker_configs["broker"]["1"]
    a.delete_topics(["kp2"])
    assert "kp2" not in a.list_topics()


def test_records_offsets_and_log_dirs(admin: tuple[BrokerProcess, Any]) -> None:
    broker, a = admin
    a.create_topics([NewTopic("kr", 1, 1)])
    produce(broker.bootstrap, "kr", 30, ts0=5_000)
    spec = kafka.OffsetSpec
    offsets = a.list_partition_offsets({TP("kr", 0): spec.LATEST})
    assert offsets[TP("kr", 0)].offset == 30
    assert a.list_partition_offsets({TP("kr", 0): 5_010})[TP("kr", 0)].offset == 10
    assert a.list_partition_offsets({TP("kr", 0): spec.MAX_TIMESTAMP})[TP("kr", 0)].offset == 29
    deleted = a.delete_records({TP("kr", 0): 12})
    assert deleted[TP("kr", 0)]["low_watermark"] == 12
    assert a.list_partition_offsets({TP("kr", 0): spec.EARLIEST})[TP("kr", 0)].offset == 12
    assert a.list_partition_offsets({TP("kr", 0): spec.EARLIEST_LOCAL})[TP("kr", 0)].offset == 12
    (dirs,) = a.describe_log_dirs()
    (log_dir,) = dirs["log_dirs"]
    assert log_dir["log_dir"] == str(broker.data_dir.resolve())
    sizes = {(t["name"], p["partition_index"]): p["partition_size"] for t in log_dir["topics"]
             for p in t["partitions"]}
    assert sizes[("kr", 0)] > 0


def test_groups_transactions_and_cluster(admin: tuple[BrokerProcess, Any]) -> None:
    broker, a = admin
    bs = broker.bootstrap
    a.create_topics([NewTopic("kg", 2, 1)])
    produce(bs, "kg", 10, ts0=1_000)
    c = kafka.KafkaConsumer("kg", bootstrap_servers=bs, group_id="kgroup", auto_offset_reset="earliest",
                            enable_auto_commit=False, client_id="kp-client")
    seen = 0
    for _ in range(50):
        seen += sum(len(v) for v in c.poll(200).values())
        if seen >= 10:
            break
    c.commit()
    assert {g["group_id"]: g["group_state"] for g in a.list_groups()}["kgroup"] == "Stable"
    group = a.describe_groups(["kgroup"])["kgroup"]
    assert [m["client_id"] for m in group["members"]] == ["kp-client"]
    c.close()
    assert a.list_group_offsets("kgroup")["kgroup"][TP("kg", 0)].offset == 10
    a.alter_group_offsets("kgroup", {TP("kg", 0): kafka.OffsetAndMetadata(3, "", -1)})
    assert a.list_group_offsets("kgroup")["kgroup"][TP("kg", 0)].offset == 3
    a.delete_group_offsets("kgroup", [TP("kg", 0)])
    assert TP("kg", 0) not in a.list_group_offsets("kgroup")["kgroup"]
    a.delete_groups(["kgroup"])
    assert "kgroup" not in {g["group_id"] for g in a.list_groups()}

    p = kafka.KafkaProducer(bootstrap_servers=bs, transactional_id="kp-txn")
    p.init_transactions()
    p.begin_transaction()
    p.send("kg", b"t", partition=1)
    p.flush()
    listed = {t.transactional_id: t.state for txns in a.list_transactions().values() for t in txns}
    assert listed["kp-txn"] == "Ongoing"
    described = a.describe_transactions(["kp-txn"])["kp-txn"]
    assert described.state == "Ongoing"
    producers = a.describe_producers([TP("kg", 1)])[TP("kg", 1)].active_producers
    assert [pr.current_transaction_start_offset for pr in producers] == [0]
    p.commit_transaction()
    p.close()

    cluster = a.describe_cluster()
    assert cluster["controller_id"] == 1
    assert [(b["broker_id"], b["port"]) for b in cluster["brokers"]] == [(1, broker.port)]


def test_describe_acls_reports_security_disabled(admin: tuple[BrokerProcess, Any]) -> None:
    _, a = admin
    pattern = ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)
    acl_filter = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY, pattern)
    with pytest.raises(kafka.errors.SecurityDisabledError):
        a.describe_acls(acl_filter)
