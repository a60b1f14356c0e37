"""The versions Kafka 4.x added and its 4.x clients negotiate, as raw requests against a real
broker: Metadata v13 (top-level error code), DescribeCluster v2 (fenced brokers), ListTransactions
v2 (transactional id pattern), ListOffsets v11 (earliest pending upload), OffsetCommit and
OffsetFetch v10 (topics by id); and the versions Kafka 4.4 added that kio lacks
(protocol/newer_schemas.py): ApiVersions v5 (KIP-1242), DeleteGroups v3 and TxnOffsetCommit v6
(KIP-1319)."""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from kio.schema.describe_cluster.v2.request import DescribeClusterRequest
from kio.schema.list_offsets.v10.request import ListOffsetsPartition as ListOffsetsPartitionV10
from kio.schema.list_offsets.v10.request import ListOffsetsRequest as ListOffsetsRequestV10
from kio.schema.list_offsets.v10.request import ListOffsetsTopic as ListOffsetsTopicV10
from kio.schema.list_offsets.v11.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kio.schema.list_transactions.v1.request import ListTransactionsRequest as ListTransactionsRequestV1
from kio.schema.list_transactions.v2.request import ListTransactionsRequest
from kio.schema.metadata.v13.request import MetadataRequest, MetadataRequestTopic
from kio.schema.offset_commit.v9.request import OffsetCommitRequest as OffsetCommitRequestV9
from kio.schema.offset_commit.v9.request import OffsetCommitRequestPartition as CommitPartitionV9
from kio.schema.offset_commit.v9.request import OffsetCommitRequestTopic as CommitTopicV9
from kio.schema.offset_commit.v10.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_fetch.v9.request import OffsetFetchRequest as OffsetFetchRequestV9
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup as FetchGroupV9
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestTopics as FetchTopicsV9
from kio.schema.offset_fetch.v10.request import OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kio.static.primitive import i8, i32, i32Timedelta, i64

from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import request_schema
from protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess
from tests.e2e.txn_clients import create_topics, plain_producer, txn_producer
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e

E = ErrorCode
SETTINGS = {"auto.create.topics.enable": "false", "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}
TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=1))
UNKNOWN_ID = uuid.UUID("00000000-0000-4000-8000-00000000abcd")


@pytest.fixture
def client(broker_factory) -> Iterator[tuple[BrokerProcess, RawClient]]:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    create_topics(broker.bootstrap, ["ids-a", "ids-b"], 2)
    with RawClient(broker.bootstrap) as raw:
        yield broker, raw


def topic_ids(raw: RawClient) -> dict[str, uuid.UUID]:
    r = raw.request(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                    include_topic_authorized_operations=False))
    assert r.error_code is E.none
    return {t.name: t.topic_id for t in r.topics}


def test_metadata_v13_answers_the_top_level_error_code_none(client: tuple[BrokerProcess, RawClient]) -> None:
    _, raw = client
    ids = topic_ids(raw)
    assert {"ids-a", "ids-b"} <= set(ids) and all(i is not None and i.int for i in ids.values())
    by_id = raw.request(MetadataRequest(topics=(MetadataRequestTopic(topic_id=ids["ids-a"], name=None),
                                                MetadataRequestTopic(topic_id=UNKNOWN_ID, name=None)),
                                        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    assert by_id.error_code is E.none
    assert [(t.name, t.error_code) for t in by_id.topics] == [("ids-a", E.none), (None, E.unknown_topic_id)]


def test_describe_cluster_v2_single_node_has_no_fenced_broker(client: tuple[BrokerProcess, RawClient]) -> None:
    broker, raw = client
    port = int(broker.bootstrap.rsplit(":", 1)[1])
    for include in (False, True):
        r = raw.request(DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=i8(1),
                                               include_fenced_brokers=include))
        assert r.error_code is E.none
        assert [(b.broker_id, b.port, b.is_fenced) for b in r.brokers] == [(1, port, False)]


def list_transactions(raw: RawClient, pattern: str | None) -> tuple[ErrorCode, list[str]]:
    r = raw.request(ListTransactionsRequest(state_filters=(), producer_id_filters=(), duration_filter=i64(-1),
                                            transactional_id_pattern=pattern))
    return r.error_code, sorted(t.transactional_id for t in r.transaction_states)


def test_list_transactions_v2_full_matches_an_re2j_pattern(client: tuple[BrokerProcess, RawClient]) -> None:
    """KIP-1152 as TransactionStateManager.listTransactionStates filters: RE2/J's matches(), so
    `app-.*` leaves out xapp-1; an invalid pattern is INVALID_REGULAR_EXPRESSION and lists nothing."""
    broker, raw = client
    ids = ["app-1", "app-22", "xapp-1", "other"]
    producers = [txn_producer(broker.bootstrap, txn_id) for txn_id in ids]  # each initialised: Empty
    assert list_transactions(raw, None) == (E.none, sorted(ids))
    assert list_transactions(raw, "") == (E.none, sorted(ids))  # empty: no filter, as Kafka
    assert list_transactions(raw, "app-.*") == (E.none, ["app-1", "app-22"])
    assert list_transactions(raw, "app") == (E.none, [])  # not a find()
    assert list_transactions(raw, r"app-\d") == (E.none, ["app-1"])
    assert list_transactions(raw, "(?i)APP-1|OTHER") == (E.none, ["app-1", "other"])
    assert list_transactions(raw, r"\Qapp-1\E|x.*") == (E.none, ["app-1", "xapp-1"])
    assert list_transactions(raw, "app-[0-9]{,2}") == (E.none, [])  # a literal brace in RE2
    # Python's re would take these; RE2/J refuses them.
    for invalid in ("app-(?=1)", r"(app)-\1", "app-1++", "app-[", "*"):
        assert list_transactions(raw, invalid) == (E.invalid_regular_expression, []), invalid
    older = raw.request(ListTransactionsRequestV1(state_filters=(), producer_id_filters=(), duration_filter=i64(-1)))
    assert sorted(t.transactional_id for t in older.transaction_states) == sorted(ids)
    del producers


def list_offsets(raw: RawClient, version: int, timestamp: int) -> tuple[ErrorCode, int, int, int]:
    if version == 11:
        request = ListOffsetsRequest(replica_id=i32(-1), isolation_level=i8(0), timeout=TIMEOUT,
                                     topics=(ListOffsetsTopic(name="ids-a", partitions=(
                                         ListOffsetsPartition(partition_index=i32(0), current_leader_epoch=i32(-1),
                                                              timestamp=i64(timestamp)),)),))
    else:
        request = ListOffsetsRequestV10(replica_id=i32(-1), isolation_level=i8(0), timeout=TIMEOUT,
                                        topics=(ListOffsetsTopicV10(name="ids-a", partitions=(
                                            ListOffsetsPartitionV10(partition_index=i32(0),
                                                                    current_leader_epoch=i32(-1),
                                                                    timestamp=i64(timestamp)),)),))
    [p] = raw.request(request).topics[0].partitions
    return p.error_code, p.offset, p.timestamp, p.leader_epoch


def test_list_offsets_v11_earliest_pending_upload_is_none_without_tiered_storage(
        client: tuple[BrokerProcess, RawClient]) -> None:
    """-6 and -5 answer what UnifiedLog answers with remote storage disabled: no offset, no
    timestamp, leader epoch -1, no error; a sentinel before its version, or a negative timestamp
    that is none, is UNSUPPORTED_VERSION (ReplicaManager.isListOffsetsTimestampUnsupported)."""
    broker, raw = client
    producer = plain_producer(broker.bootstrap)
    for i in range(3):
        producer.produce("ids-a", f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    assert list_offsets(raw, 11, -6) == (E.none, -1, -1, -1)
    assert list_offsets(raw, 11, -5) == (E.none, -1, -1, -1)
    assert list_offsets(raw, 11, -2) == (E.none, 0, -1, 0)
    assert list_offsets(raw, 11, -1) == (E.none, 3, -1, 0)
    assert list_offsets(raw, 10, -6)[0] is E.unsupported_version
    assert list_offsets(raw, 11, -7)[0] is E.unsupported_version
    assert list_offsets(raw, 10, -5) == (E.none, -1, -1, -1)


def commit_v10(raw: RawClient, group: str, offsets: dict[uuid.UUID, dict[int, int]]) -> list[tuple[object, ...]]:
    r = raw.request(OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=i32(-1), member_id="", group_instance_id=None,
        topics=tuple(OffsetCommitRequestTopic(topic_id=topic_id, partitions=tuple(
            OffsetCommitRequestPartition(partition_index=i32(p), committed_offset=i64(o),
                                         committed_leader_epoch=i32(-1), committed_metadata=f"m{o}")
            for p, o in parts.items())) for topic_id, parts in offsets.items())))
    return [(t.topic_id, p.partition_index, p.error_code) for t in r.topics for p in t.partitions]


def fetch_v10(raw: RawClient, group: str, topics: dict[uuid.UUID, list[int]] | None) -> list[tuple[object, ...]]:
    r = raw.request(OffsetFetchRequest(require_stable=True, groups=(OffsetFetchRequestGroup(
        group_id=group, member_id=None, member_epoch=i32(-1),
        topics=None if topics is None else tuple(
            OffsetFetchRequestTopics(topic_id=topic_id, partition_indexes=tuple(i32(p) for p in parts))
            for topic_id, parts in topics.items())),)))
    [g] = r.groups
    assert g.error_code is E.none
    return [(t.topic_id, p.partition_index, p.committed_offset, p.metadata, p.error_code)
            for t in g.topics for p in t.partitions]


def test_offset_commit_and_fetch_v10_name_topics_by_id(client: tuple[BrokerProcess, RawClient]) -> None:
    """KafkaApis resolves each id to its topic; an unknown id is UNKNOWN_TOPIC_ID for each of its
    partitions (a commit's other topics still commit, a fetch lists it after them); partition
    checks then apply as by name; offsets committed by id are the ones committed by name."""
    _, raw = client
    ids = topic_ids(raw)
    a, b = ids["ids-a"], ids["ids-b"]
    assert commit_v10(raw, "g10", {a: {0: 5, 1: 7}, UNKNOWN_ID: {0: 1}, b: {0: 3, 9: 4}}) == [
        (a, 0, E.none), (a, 1, E.none), (UNKNOWN_ID, 0, E.unknown_topic_id),
        (b, 0, E.none), (b, 9, E.unknown_topic_or_partition)]
    assert fetch_v10(raw, "g10", {UNKNOWN_ID: [0, 1], a: [1, 0], b: [1]}) == [
        (a, 1, 7, "m7", E.none), (a, 0, 5, "m5", E.none), (b, 1, -1, "", E.none),
        (UNKNOWN_ID, 0, -1, "", E.unknown_topic_id), (UNKNOWN_ID, 1, -1, "", E.unknown_topic_id)]
    assert sorted(fetch_v10(raw, "g10", None), key=str) == sorted(
        [(a, 0, 5, "m5", E.none), (a, 1, 7, "m7", E.none), (b, 0, 3, "m3", E.none)], key=str)
    # By name (v9) the same offsets; a v9 commit is read back by id.
    v9 = raw.request(OffsetFetchRequestV9(require_stable=False, groups=(FetchGroupV9(
        group_id="g10", member_id=None, member_epoch=i32(-1),
        topics=(FetchTopicsV9(name="ids-a", partition_indexes=(i32(0), i32(1))),)),)))
    assert [(p.partition_index, p.committed_offset) for p in v9.groups[0].topics[0].partitions] == [(0, 5), (1, 7)]
    committed = raw.request(OffsetCommitRequestV9(
        group_id="g10", generation_id_or_member_epoch=i32(-1), member_id="", group_instance_id=None,
        topics=(CommitTopicV9(name="ids-b", partitions=(CommitPartitionV9(
            partition_index=i32(1), committed_offset=i64(11), committed_leader_epoch=i32(-1),
            committed_metadata=None),)),)))
    assert committed.topics[0].partitions[0].error_code is E.none
    assert fetch_v10(raw, "g10", {b: [1]}) == [(b, 1, 11, "", E.none)]


def test_a_deleted_topics_offsets_are_not_read_by_the_new_topics_id(
        client: tuple[BrokerProcess, RawClient]) -> None:
    """What Kafka's stored topic id guards (OffsetMetadataManager.isOffsetInvalid): a topic deleted
    and created again under its name is a new id, and its old offsets are not its offsets."""
    broker, raw = client
    old = topic_ids(raw)["ids-b"]
    assert commit_v10(raw, "g-recreate", {old: {0: 9}}) == [(old, 0, E.none)]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics(["ids-b"])["ids-b"].result(30)
    assert fetch_v10(raw, "g-recreate", {old: [0]}) == [(old, 0, -1, "", E.unknown_topic_id)]
    create_topics(broker.bootstrap, ["ids-b"], 2)
    new = topic_ids(raw)["ids-b"]
    assert new != old
    assert fetch_v10(raw, "g-recreate", {new: [0]}) == [(new, 0, -1, "", E.none)]
    assert fetch_v10(raw, "g-recreate", None) == []


# -- Kafka 4.4's versions (protocol/newer_schemas.py) ----------------------------------------------


def api_versions_v5(raw: RawClient, cluster_id: str | None, node_id: int) -> Any:
    return raw.request(build(request_schema(ApiKey.API_VERSIONS, 5), {
        "client_software_name": "test", "client_software_version": "1", "cluster_id": cluster_id,
        "node_id": node_id}))


def test_api_versions_v5_answers_rebootstrap_required_to_a_client_meant_for_another_broker(
        client: tuple[BrokerProcess, RawClient]) -> None:
    """KIP-1242, as Kafka 4.4's KafkaApis checks it: only a request naming a cluster is checked,
    and then both the cluster id and the node id must be this broker's."""
    _, raw = client
    cluster_id = raw.request(MetadataRequest(topics=(), allow_auto_topic_creation=False,
                                             include_topic_authorized_operations=False)).cluster_id
    assert cluster_id
    for asked in ((None, -1), (None, 7), (cluster_id, 1)):
        r = api_versions_v5(raw, *asked)
        assert r.error_code is E.none, asked
        assert {k.api_key: k.max_version for k in r.api_keys}[ApiKey.API_VERSIONS] == 5
    for asked in (("another-cluster", 1), (cluster_id, 2), (cluster_id, -1)):
        r = api_versions_v5(raw, *asked)
        assert (r.error_code, r.api_keys, r.supported_features) == (E.rebootstrap_required, (), ()), asked
    assert api_versions_v5(raw, cluster_id, 1).error_code is E.none  # the connection stays usable


def test_delete_groups_v3_answers_a_null_message_per_group(client: tuple[BrokerProcess, RawClient]) -> None:
    """Kafka 4.4 adds ErrorMessage to each result and leaves it null."""
    _, raw = client
    assert commit_v10(raw, "del-v3", {topic_ids(raw)["ids-a"]: {0: 1}})[0][2] is E.none
    r = raw.request(build(request_schema(ApiKey.DELETE_GROUPS, 3), {"groups_names": ["del-v3", "no-such-group"]}))
    assert [(g.group_id, g.error_code, g.error_message) for g in r.results] == [
        ("del-v3", E.none, None), ("no-such-group", E.group_id_not_found, None)]


def txn_producer_id(raw: RawClient, transactional_id: str) -> tuple[int, int]:
    r = raw.request(build(request_schema(ApiKey.INIT_PRODUCER_ID, 5), {
        "transactional_id": transactional_id, "transaction_timeout": 60_000, "producer_id": -1,
        "producer_epoch": -1}))
    assert r.error_code is E.none
    return r.producer_id, r.producer_epoch


def txn_commit(raw: RawClient, version: int, pid_epoch: tuple[int, int], group: str, generation: int,
               topics: dict[Any, dict[int, int]]) -> list[tuple[Any, int, ErrorCode]]:
    key = "topic_id" if version >= 6 else "name"
    r = raw.request(build(request_schema(ApiKey.TXN_OFFSET_COMMIT, version), {
        "transactional_id": "tx-newer", "group_id": group, "producer_id": pid_epoch[0],
        "producer_epoch": pid_epoch[1], "generation_id": generation, "member_id": "m" if generation >= 0 else "",
        "group_instance_id": None,
        "topics": [{key: t, "partitions": [{"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                                           "committed_metadata": None} for p, o in parts.items()]}
                   for t, parts in topics.items()]}))
    return [(getattr(t, key), p.partition_index, p.error_code) for t in r.topics for p in t.partitions]


def end_txn(raw: RawClient, pid_epoch: tuple[int, int], commit: bool) -> ErrorCode:
    return raw.request(build(request_schema(ApiKey.END_TXN, 5), {
        "transactional_id": "tx-newer", "producer_id": pid_epoch[0], "producer_epoch": pid_epoch[1],
        "committed": commit})).error_code


def test_txn_offset_commit_v6_names_topics_by_id(client: tuple[BrokerProcess, RawClient]) -> None:
    """KIP-1319: topics by id both ways, UNKNOWN_TOPIC_ID for an id the broker does not know; the
    offsets commit with the transaction (Transactions V2: no AddOffsetsToTxn) and read back."""
    _, raw = client
    ids = topic_ids(raw)
    a = ids["ids-a"]
    pid_epoch = txn_producer_id(raw, "tx-newer")
    assert txn_commit(raw, 6, pid_epoch, "g-txn6", -1, {a: {0: 4, 1: 6}, UNKNOWN_ID: {0: 1}}) == [
        (a, 0, E.none), (a, 1, E.none), (UNKNOWN_ID, 0, E.unknown_topic_id)]
    assert end_txn(raw, pid_epoch, commit=True) is E.none
    deadline = time.monotonic() + 10
    while (got := fetch_v10(raw, "g-txn6", {a: [0, 1]})) != [(a, 0, 4, "", E.none), (a, 1, 6, "", E.none)]:
        assert time.monotonic() < deadline, got
        time.sleep(0.05)


@pytest.mark.parametrize(("version", "expected"), [(5, E.illegal_generation), (6, E.group_id_not_found)])
def test_txn_offset_commit_of_a_generation_of_an_unknown_group_is_refused(
        client: tuple[BrokerProcess, RawClient], version: int, expected: ErrorCode) -> None:
    """Kafka's validateTransactionalOffsetCommit: a group the coordinator does not know is created
    only for a generation below 0; from a member of some generation it is ILLEGAL_GENERATION,
    GROUP_ID_NOT_FOUND from v6. Nothing is written: the producer's transaction aborts empty."""
    _, raw = client
    a = topic_ids(raw)["ids-a"]
    pid_epoch = txn_producer_id(raw, "tx-newer")
    topic = a if version >= 6 else "ids-a"
    assert txn_commit(raw, version, pid_epoch, f"gone-{version}", 3, {topic: {0: 1}}) == [(topic, 0, expected)]
    assert end_txn(raw, pid_epoch, commit=False) is E.none
    assert fetch_v10(raw, f"gone-{version}", {a: [0]}) == [(a, 0, -1, "", E.none)]
