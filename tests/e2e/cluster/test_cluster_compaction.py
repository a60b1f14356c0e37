"""Log compaction in cluster mode, with real clients: a compacted topic with many versions,
tombstones and interleaved committed/aborted transactions read exactly at both isolation levels
after cleaning; a leader killed with -9 while it cleans loses nothing and resurrects nothing; a
group's offsets after many commits survive the loss of its coordinator with bounded rows in
PostgreSQL; so does a transactional id's state after many transactions."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import asyncpg
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from broker.embedded import create_topic
from coordinator.group.log import partition_for
from coordinator.transaction.log import partition_for as txn_partition_for
from protocol.record_batch import iter_batches
from storage.object_store import open_object_store
from tests.e2e.cluster.conftest import Cluster, wait_until
from tests.e2e.test_compaction import TOPIC_CONFIG, consume_all, produce
from tests.e2e.test_compaction_crash import TOPIC as CRASH_TOPIC
from tests.e2e.test_compaction_crash import set_dirty_ratio
from tests.e2e.test_compaction_txn import TOPIC as TXN_TOPIC
from tests.e2e.test_compaction_txn import Written, _recorder, write_interleaved
from tests.e2e.txn_clients import WAIT_S, confluent_read, txn_producer

pytestmark = pytest.mark.e2e

CLEANER = {"log.cleaner.backoff.ms": "50"}
WAIT_CLEANED_S = 300.0


def query(url: str, sql: str, *args: object) -> Any:
    """One value from the cluster database (what the brokers really stored)."""
    async def run() -> Any:
        conn = await asyncpg.connect(url)
        try:
            return await conn.fetchval(sql, *args)
        finally:
            await conn.close()
    return asyncio.run(run())


def checkpoint(url: str, topic: str, partition: int = 0) -> int:
    return int(query(url, "SELECT p.cleaner_checkpoint FROM partitions p JOIN topics t USING (topic_id) "
                          "WHERE t.name = $1 AND p.partition = $2", topic, partition))


def rows_of(cluster: Cluster, topic: str, partition: int = 0) -> int:
    """The batches stored for the partition: rows of `batches`, or over an object store (the
    cluster has store_settings: tests/e2e/objects) the batches in the bytes of its runs."""
    settings = getattr(cluster, "store_settings", None)
    if settings is None:
        return int(query(cluster.url, "SELECT count(*) FROM batches b JOIN topics t USING (topic_id) "
                                      "WHERE t.name = $1 AND b.partition = $2", topic, partition))
    return asyncio.run(_batches_in_runs(cluster.url, settings, topic, partition))


async def _batches_in_runs(url: str, settings: dict[str, str], topic: str, partition: int) -> int:
    store = open_object_store(settings["cluster.object.store.url"], endpoint=settings["cluster.object.store.endpoint"],
                              region=settings["cluster.object.store.region"])
    conn = await asyncpg.connect(url)
    try:
        runs = await conn.fetch("SELECT object_key, byte_start, byte_length, data FROM batch_runs r JOIN topics t "
                                "USING (topic_id) WHERE t.name = $1 AND r.partition = $2", topic, partition)
    finally:
        await conn.close()
    count = 0
    for run in runs:  # a run of the broker's own records may be held in its row (object_key '', ce2c3aa)
        data = run["data"]
        if data is None:
            data = await store.get_range(run["object_key"], run["byte_start"], run["byte_start"] + run["byte_length"])
        count += sum(1 for _ in iter_batches(data))
    return count


def wait_cleaned_past(cluster: Cluster, topic: str, offset: int) -> None:
    wait_until(lambda: checkpoint(cluster.url, topic) > offset, f"{topic} cleaned past offset {offset}",
               WAIT_CLEANED_S)


def check_read(written: Written, rows: list[tuple[int, bytes | None]], level: str) -> None:
    offsets = [o for o, _ in rows]
    assert offsets == sorted(set(offsets)), f"{level}: offsets go forward, gaps allowed"
    for offset, value in rows:
        assert written[offset][1] == value, f"{level}: offset {offset} is not what was written there"
        assert written[offset][2] != "aborted", f"{level}: aborted record at {offset} survived cleaning"
    latest: dict[bytes, int] = {}
    for offset in sorted(written):
        if written[offset][2] != "aborted":
            latest[written[offset][0]] = offset
    seen = {written[o][0]: o for o in offsets}
    for key, offset in latest.items():
        if written[offset][1] is None:  # deleted: gone once the tombstone has passed its horizon
            assert key not in seen, f"{level}: deleted key {key!r} resurrected"
        else:
            assert seen.get(key) == offset, f"{level}: the latest value of {key!r} is not at {offset}"
    assert len(rows) < sum(kind != "aborted" for _, _, kind in written.values()), "nothing was compacted"


def test_versions_tombstones_and_transactions_read_exactly_after_cleaning(cluster: Cluster) -> None:
    cluster.start(1, 2, settings=CLEANER)
    bootstrap = cluster.bootstrap()
    create_topic(cluster.brokers[1].bootstrap, TXN_TOPIC, 1, TOPIC_CONFIG)
    cluster.settled(TXN_TOPIC)
    written: Written = {}
    versions = [(b"key-%d" % k, b"value-%d-%d-" % (k, r) + b"x" * 40) for r in range(8) for k in range(12)]
    versions += [(b"key-%d" % k, None) for k in range(0, 12, 4)]  # tombstones
    written.update({o: (k, v, "plain") for o, k, v in produce(bootstrap, TXN_TOPIC, versions, "lz4")})
    txn = txn_producer(bootstrap, "cluster-compacting", **{"batch.num.messages": 2, "linger.ms": 0})
    plain = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 0,
                      "batch.num.messages": 2})
    write_interleaved(txn, plain, written, range(9), aborts=True)

    def fill(tag: str) -> int:
        for i in range(120):  # pushes what came before out of the active range
            plain.produce(TXN_TOPIC, key=b"filler-%d" % i, value=tag.encode() * 40,
                          on_delivery=_recorder(written, "plain"))
        assert plain.flush(WAIT_S) == 0
        return max(written)

    fill("f")
    wait_cleaned_past(cluster, TXN_TOPIC, max(o for o, (k, _, _) in written.items() if k.startswith(b"t")))
    end = fill("g")  # a second pass: the tombstones' and emptied markers' horizon (0 ms) has passed
    wait_cleaned_past(cluster, TXN_TOPIC, end - 100)
    write_interleaved(txn, plain, written, range(9, 11), aborts=False)  # both producers go on
    for level in ("read_committed", "read_uncommitted"):
        got = confluent_read(bootstrap, {TXN_TOPIC: 1}, level, 1)
        check_read(written, [(o, v) for _, _, o, v in got], f"confluent-kafka {level}")
    assert rows_of(cluster, TXN_TOPIC) < len(written) // 2


def test_a_leader_killed_while_cleaning_loses_and_resurrects_nothing(cluster: Cluster) -> None:
    cluster.start(1, 2, settings=CLEANER)
    create_topic(cluster.brokers[1].bootstrap, CRASH_TOPIC, 1, {**TOPIC_CONFIG, "min.cleanable.dirty.ratio": "1.0"})
    written: dict[int, tuple[bytes, bytes | None]] = {}
    visible: set[int] = set()  # offsets a consumer could still see after the last kill
    for cycle in range(4):
        [(leader, _)] = cluster.settled(CRASH_TOPIC).values()
        victim = cluster.brokers[leader]
        rows = [(b"k%d" % (i % 25), None if i % 13 == 5 else b"c%d-%d-" % (cycle, i) + b"x" * 30)
                for i in range(150)]
        set_dirty_ratio(cluster.brokers[leader].bootstrap, "1.0")
        written.update({o: (k, v) for o, k, v in produce(cluster.bootstrap(), CRASH_TOPIC, rows, "lz4")})
        # Killed as its pass starts (the worker reading or writing), or just after one committed.
        text = f"cleaning {CRASH_TOPIC}-0: offsets" if cycle % 2 == 0 else f"cleaned {CRASH_TOPIC}-0:"
        since = len(victim.log_lines)
        set_dirty_ratio(cluster.brokers[leader].bootstrap, "0.01")
        assert victim.wait_for_log(text, since=since, timeout=WAIT_CLEANED_S), f"no {text!r}"
        cluster.kill(leader)
        [(successor, _)] = cluster.settled(CRASH_TOPIC).values()
        got = consume_all(cluster.brokers[successor].bootstrap, CRASH_TOPIC, max(written) + 1)
        offsets = [o for o, _, _ in got]
        assert offsets == sorted(set(offsets))
        assert all(written[o] == (k, v) for o, k, v in got), "every record is the one written at its offset"
        latest = {k: o for o, (k, _) in sorted(written.items())}
        for key, offset in latest.items():
            if written[offset][1] is not None:
                assert (offset, key, written[offset][1]) in got, f"cycle {cycle}: {key!r}'s latest value lost"
        if visible:
            assert set(offsets) <= visible | {o for o in written if o > max(visible)}, \
                f"cycle {cycle}: records removed by cleaning came back"
        visible = set(offsets)
        cluster.start(leader)


_COORDINATOR_MOVED = frozenset({KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE,
                                KafkaError.COORDINATOR_LOAD_IN_PROGRESS})


def _commit(consumer: Consumer, offsets: list[CTopicPartition]) -> None:
    """A synchronous commit, tried again on a retriable error as an application would (a shard
    that moved to the other broker answers NOT_COORDINATOR, and librdkafka fails that commit)."""
    for _ in range(20):
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            return
        except KafkaException as exc:
            error = exc.args[0]
            if not (error.retriable() or error.code() in _COORDINATOR_MOVED):
                raise
            time.sleep(0.2)
    consumer.commit(offsets=offsets, asynchronous=False)


def test_a_groups_offsets_after_many_commits_survive_failover_with_bounded_rows(cluster: Cluster) -> None:
    cluster.start(1, 2, settings={**CLEANER, "offsets.topic.segment.bytes": "4096"})
    bootstrap = cluster.bootstrap()
    create_topic(cluster.brokers[1].bootstrap, "committed", 2)
    cluster.settled("__consumer_offsets")  # the coordinator shards have their owners before the commits
    group = "many-commits"
    shard = partition_for(group, 4)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    commits = 1500
    try:
        for i in range(commits):
            _commit(consumer, [CTopicPartition("committed", 0, i), CTopicPartition("committed", 1, 2 * i)])
    finally:
        consumer.close()
    # Batches here, records in the successor's replay below: each commit is one batch of two records.
    wait_until(lambda: rows_of(cluster, "__consumer_offsets", shard) < commits // 20,
               "__consumer_offsets to be compacted", WAIT_CLEANED_S)
    [(coordinator, _)] = [v for p, v in cluster.settled("__consumer_offsets").items() if p == shard]
    cluster.kill(coordinator)
    [successor] = cluster.live()
    cluster.settled("__consumer_offsets")
    reader = Consumer({"bootstrap.servers": cluster.brokers[successor].bootstrap, "group.id": group})
    try:
        got = reader.committed([CTopicPartition("committed", 0), CTopicPartition("committed", 1)], timeout=WAIT_S)
    finally:
        reader.close()
    assert [(tp.partition, tp.offset) for tp in got] == [(0, commits - 1), (1, 2 * (commits - 1))]
    line = cluster.brokers[successor].wait_for_log(rf"loaded 1 groups from \d+ records of __consumer_offsets-{shard}")
    assert line is not None
    replayed = int(line.split(" records of")[0].rsplit(" ", 1)[1])
    assert replayed < commits // 10, line


def test_transaction_state_is_compacted_and_survives_the_loss_of_its_coordinator(cluster: Cluster) -> None:
    cluster.start(1, 2, settings={**CLEANER, "transaction.state.log.segment.bytes": "4096"})
    create_topic(cluster.brokers[1].bootstrap, "txn-out", 1)
    txn_id = "compacted-state"
    shard = txn_partition_for(txn_id, 4)
    producer = txn_producer(cluster.bootstrap(), txn_id)
    transactions = 100
    for i in range(transactions):
        producer.begin_transaction()
        producer.produce("txn-out", key=b"k", value=b"%d" % i)
        producer.commit_transaction(2 * WAIT_S)
    written = int(query(cluster.url, "SELECT p.next_offset FROM partitions p JOIN topics t USING (topic_id) "
                                     "WHERE t.name = '__transaction_state' AND p.partition = $1", shard))
    assert written >= 3 * transactions  # each transaction's states were appended
    wait_until(lambda: rows_of(cluster, "__transaction_state", shard) < transactions // 2,
               "__transaction_state to be compacted", WAIT_CLEANED_S)
    [(coordinator, _)] = [v for p, v in cluster.settled("__transaction_state").items() if p == shard]
    cluster.kill(coordinator)
    [successor] = cluster.live()
    cluster.settled("__transaction_state")
    producer.flush(0)
    again = txn_producer(cluster.brokers[successor].bootstrap, txn_id)  # its state was loaded: fenced and bumped
    again.begin_transaction()
    again.produce("txn-out", key=b"k", value=b"after")
    again.commit_transaction(2 * WAIT_S)
    got = confluent_read(cluster.brokers[successor].bootstrap, {"txn-out": 1}, "read_committed", transactions + 1)
    assert [v for _, _, _, v in got] == [b"%d" % i for i in range(transactions)] + [b"after"]
