"""Three brokers over PostgreSQL with their record data in a real S3 server (SeaweedFS on loopback).
Run again here over objects (imported below): the cluster suite's transactions across brokers (read
exactly at read_committed by confluent-kafka, kafka-python and Java), a leader killed with -9 or
paused past its lease, the transaction and group coordinators killed, PostgreSQL restarted under
load, markers following a killed leader, and an idempotent retry at the new leader. Particular to
objects: a broker killed between storing a flush's object and committing it, whose producer's retry
is written once; the object store restarted under load; and the store stopped while old data is
fetched and new data produced (retriable errors, both carry on once it is back)."""

from __future__ import annotations

import asyncio
import datetime
import threading

import asyncpg
import pytest
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic

from protocol.errors import ErrorCode
from storage.object_store import open_object_store
from storage.pg.object_commit import CRASH_AFTER_PUT_ENV
from tests.e2e.cluster.conftest import WAIT_S, wait_until
from tests.e2e.cluster.test_cluster_coordinators import (  # noqa: F401  (run here over objects)
    test_committed_offsets_survive_the_loss_of_the_group_coordinator,
    test_markers_follow_a_partition_whose_leader_was_killed_mid_transaction,
    test_the_next_coordinator_completes_a_commit_whose_coordinator_died,
    test_transactions_across_brokers_are_read_exactly,
)
from tests.e2e.cluster.test_failover import (  # noqa: F401
    Sender,
    batch,
    create_topic,
    exactly_once_in_order,
    led_by,
    raw_produce,
    read_all,
    test_a_killed_leader_is_replaced_and_its_restart_on_an_empty_dir_loses_nothing,
    test_a_leader_paused_past_its_lease_has_its_appends_refused,
    test_a_postgresql_restart_while_producing_loses_nothing_acknowledged,
    test_an_idempotent_retry_reaching_the_new_leader_is_deduplicated,
)
from tests.e2e.objects.conftest import ObjectCluster
from tests.kafka_wire import RawClient
from tests.s3_server import S3Server

pytestmark = pytest.mark.e2e


async def _orphans(cluster: ObjectCluster) -> tuple[set[str], int]:
    """The stored flush objects no commit recorded, and the rows of record data in the database."""
    settings = cluster.store_settings
    store = open_object_store(settings["cluster.object.store.url"], endpoint=settings["cluster.object.store.endpoint"],
                              region=settings["cluster.object.store.region"])
    stored = {i.key async for chunk in store.list("flush/") for i in chunk}
    conn = await asyncpg.connect(cluster.url)
    try:
        recorded = {r["object_key"] for r in await conn.fetch("SELECT object_key FROM flush_objects")}
        return stored - recorded, await conn.fetchval("SELECT count(*) FROM batches")
    finally:
        await conn.close()


def test_a_broker_killed_between_upload_and_commit_acknowledges_nothing_and_the_retry_is_written_once(
    cluster: ObjectCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster.start(2)
    with monkeypatch.context() as env:  # broker 1 kills itself right after storing its first object
        env.setenv(CRASH_AFTER_PUT_ENV, "1")
        cluster.start(1)
    create_topic(cluster, "crash", 2)
    [partition] = led_by(cluster.settled("crash"), 1)
    first = batch(b"a", b"b", b"c", producer_id=515151, base_sequence=0)
    with pytest.raises(Exception):  # noqa: B017  the connection drops: no answer, no acknowledgement
        raw_produce(cluster.brokers[1].bootstrap, "crash", partition, first)
    cluster.brokers[1].proc.wait(30)  # type: ignore[union-attr]
    assert cluster.brokers[1].logged("fault injection: killed after storing object")
    cluster.kill(1)
    assert cluster.brokers[1].bad_exits == ["the broker exited by itself with code -9"]
    cluster.brokers[1].bad_exits.clear()  # the exit this test caused
    wait_until(lambda: cluster.leaders("crash", 2)[partition][0] == 2, "broker 2 taking the partition")
    retry = raw_produce(cluster.brokers[2].bootstrap, "crash", partition, first)
    assert (retry.error_code, retry.base_offset) == (ErrorCode.none, 0)  # new here: nothing was committed
    again = raw_produce(cluster.brokers[2].bootstrap, "crash", partition, first)
    assert (again.error_code, again.base_offset) == (ErrorCode.none, 0)  # now a duplicate
    following = batch(b"d", producer_id=515151, base_sequence=3)
    assert raw_produce(cluster.brokers[2].bootstrap, "crash", partition, following).base_offset == 3
    rows = read_all(cluster, "crash", 2, 4, 2)
    assert [v for p, _, v in sorted(rows) if p == partition] == [b"a", b"b", b"c", b"d"]
    orphans, rows_in_db = asyncio.run(_orphans(cluster))
    assert len(orphans) == 1 and rows_in_db == 0  # the killed broker's object, never referenced


def test_an_object_store_restart_while_producing_loses_nothing_acknowledged(
    cluster: ObjectCluster, s3_server: S3Server
) -> None:
    """The store killed (-9) and started again on its directory under load: appends and fetches
    get retriable errors meanwhile, the brokers carry on once it is back, nothing acknowledged is
    lost or written twice."""
    cluster.start(1, 2)
    create_topic(cluster, "store-outage", 2)
    cluster.settled("store-outage")
    sender = Sender(cluster.bootstrap())
    stop = threading.Event()
    sent = 0

    def produce() -> None:  # without pause, from before the restart until well after it
        nonlocal sent
        while not stop.is_set():
            sender.send("store-outage", range(sent, sent + 50), 2)
            sent += 50
            sender.producer.poll(0.02)

    thread = threading.Thread(target=produce)
    thread.start()
    try:
        wait_until(lambda: len(sender.acked) >= 300, "the first acknowledgements")
        s3_server.restart()
        before = len(sender.acked)
        wait_until(lambda: len(sender.acked) >= before + 500, "acknowledgements after the restart")
    finally:
        stop.set()
        thread.join(WAIT_S)
    sender.flush()
    assert sender.errors == [], sender.errors[:5]  # librdkafka retried whatever was refused
    assert len(sender.acked) == sent
    assert any(cluster.brokers[n].logged("flushes to the object store fail") for n in (1, 2))  # it was felt
    exactly_once_in_order(read_all(cluster, "store-outage", 2, sent, 2), sender.acked, 2)


def _fetch_from_start(bootstrap: str, topic: str) -> tuple[int, int]:
    """(error code, bytes of records) of a Fetch of the partition from offset 0."""
    fetch = FetchRequest(
        replica_id=-1, max_wait=datetime.timedelta(milliseconds=100), min_bytes=1, max_bytes=1 << 20,
        isolation_level=0, session_id=0, session_epoch=-1,
        topics=(FetchTopic(topic=topic, partitions=(FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
            partition_max_bytes=1 << 20),)),),
        forgotten_topics_data=(), rack_id="")
    with RawClient(bootstrap, timeout=WAIT_S) as client:
        [topic_response] = client.request(fetch).responses
    [part] = topic_response.partitions
    return part.error_code, len(part.records or b"")


def test_a_store_down_makes_old_fetches_and_appends_retriable_and_both_carry_on_when_it_returns(
    cluster: ObjectCluster, s3_server: S3Server
) -> None:
    cluster.start(1)
    create_topic(cluster, "store-down", 1)
    cluster.settled("store-down")
    sender = Sender(cluster.bootstrap())
    sender.send("store-down", range(0, 300), 1)
    sender.flush()
    cluster.brokers[1].stop()  # started again: its tail and read caches are empty, old data is in the store
    cluster.ended.add(1)
    cluster.start(1)
    cluster.settled("store-down")
    s3_server.stop()
    try:
        assert _fetch_from_start(cluster.bootstrap(), "store-down") == (ErrorCode.kafka_storage_error, 0)
        sender.send("store-down", range(300, 400), 1)  # refused meanwhile; librdkafka retries them
        sender.producer.poll(1.0)
        assert len(sender.acked) == 300 and sender.errors == []
    finally:
        s3_server.start()
    sender.flush()
    assert sender.errors == [] and len(sender.acked) == 400
    code, size = _fetch_from_start(cluster.bootstrap(), "store-down")
    assert code == ErrorCode.none and size > 0
    assert cluster.brokers[1].logged("flushes to the object store fail")
    exactly_once_in_order(read_all(cluster, "store-down", 1, 400), sender.acked, 1)
