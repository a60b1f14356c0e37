"""PgLogSource against a real PostgreSQL: topics and configs shared by every broker of the cluster,
and which partitions a broker serves."""

from __future__ import annotations

import asyncio

import pytest

from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition
from storage.pg.log_source import PgLogSource
from tests.storage.pg.conftest import SourceFactory
from tests.storage.pg.helpers import batch, take


def code(err: pytest.ExceptionInfo[KafkaError]) -> ErrorCode:
    return err.value.code


async def test_a_topic_created_through_one_broker_is_seen_by_the_others(source_factory: SourceFactory, db) -> None:
    one, two = await source_factory(1), await source_factory(2)
    meta = await one.create_topic("t", 3, {"retention.ms": "1000"})
    assert await db.fetchval("SELECT count(*) FROM partitions WHERE topic_id = $1", meta.topic_id) == 3
    await two.refresh_topics()
    assert two.topics["t"] == meta
    with pytest.raises(KafkaError) as err:
        await two.create_topic("t", 1)
    assert code(err) is ErrorCode.topic_already_exists
    assert (await source_factory(3)).topics["t"] == meta  # loaded at start


async def test_lookup_finds_a_topic_another_broker_just_created(source_factory: SourceFactory, db) -> None:
    one, two = await source_factory(1), await source_factory(2, refresh_interval_ms=600_000)
    assert await two.lookup_topic("t") is None
    meta = await one.create_topic("t", 2)
    assert "t" not in two.topics  # its periodic refresh has not run yet
    await asyncio.sleep(0.15)  # lookups of missing topics re-read at most every 100 ms
    found = await asyncio.gather(*(two.lookup_topic("t") for _ in range(5)))
    assert found == [meta] * 5 and two.topics["t"] == meta


async def test_a_topic_created_twice_at_once_exists_once(source_factory: SourceFactory, db) -> None:
    one, two = await source_factory(1), await source_factory(2)
    await one.create_topic("t", 1)
    with pytest.raises(KafkaError) as err:  # two has not refreshed: the database refuses it
        await two.create_topic("t", 2)
    assert code(err) is ErrorCode.topic_already_exists
    assert await db.fetchval("SELECT count(*) FROM partitions") == 1
    # ... and two knows the topic at once: brokers starting together all create the internal
    # topics, and the losers go on to use them (a KeyError there stopped a broker at start)
    assert two.topics["t"].partitions == 1


async def test_bad_topics_are_refused(source: PgLogSource) -> None:
    for name, partitions, configs, expected in [
        ("bad name", 1, {}, ErrorCode.invalid_topic_exception),
        ("t", 0, {}, ErrorCode.invalid_partitions),
        ("t", 1, {"retention.ms": "soon"}, ErrorCode.invalid_config),
    ]:
        with pytest.raises(KafkaError) as err:
            await source.create_topic(name, partitions, configs)
        assert code(err) is expected
    assert (await source.create_topic("t", 2, validate_only=True)).partitions == 2
    assert "t" not in source.topics


async def test_get_log_tells_unknown_from_led_elsewhere(source: PgLogSource, db) -> None:
    await source.create_topic("t", 2)
    plog = await take(db, source, TopicPartition("t", 0))
    assert source.get_log(TopicPartition("t", 0)) is plog
    for tp, expected in [(TopicPartition("t", 1), ErrorCode.not_leader_or_follower),
                         (TopicPartition("t", 2), ErrorCode.unknown_topic_or_partition),
                         (TopicPartition("u", 0), ErrorCode.unknown_topic_or_partition)]:
        with pytest.raises(KafkaError) as err:
            source.get_log(tp)
        assert code(err) is expected


async def test_create_partitions_and_alter_configs(source_factory: SourceFactory, db) -> None:
    one, two = await source_factory(1), await source_factory(2)
    await one.create_topic("t", 1)
    await two.refresh_topics()
    plog = await take(db, two, TopicPartition("t", 0))
    await one.create_partitions("t", 3)
    with pytest.raises(KafkaError) as err:
        await one.create_partitions("t", 2)
    assert code(err) is ErrorCode.invalid_partitions
    await one.alter_configs("t", {"max.message.bytes": "100"})
    await two.refresh_topics()
    assert two.topics["t"].partitions == 3
    assert two.topics["t"].configs == {"max.message.bytes": "100"}
    with pytest.raises(KafkaError) as err:  # the log two leads adopted the new config
        await plog.append(batch(10))
    assert code(err) is ErrorCode.message_too_large
    assert await db.fetchval("SELECT count(*) FROM partitions") == 3


async def test_delete_topic_removes_its_rows_and_fences_its_leaders(source_factory: SourceFactory, db) -> None:
    one, two = await source_factory(1), await source_factory(2)
    await one.create_topic("t", 1)
    await two.refresh_topics()
    plog = await take(db, two, TopicPartition("t", 0))
    await plog.append(batch(3))
    dropped: list[TopicPartition] = []
    two.add_fenced_listener(dropped.append)
    await one.delete_topic("t")
    for table in ("topics", "partitions", "batches", "producer_snapshots", "aborted_txns"):
        assert await db.fetchval(f"SELECT count(*) FROM {table}") == 0, table
    with pytest.raises(KafkaError) as err:  # the append finds no partition row: nothing written
        await plog.append(batch(1))
    assert code(err) is ErrorCode.not_leader_or_follower
    assert await db.fetchval("SELECT count(*) FROM batches") == 0
    assert dropped == [TopicPartition("t", 0)]
    await two.refresh_topics()
    assert "t" not in two.topics
