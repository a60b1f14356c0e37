"""Membership and partition leases against a real PostgreSQL server. A lease "lapses" here by
moving its expiry into the past with SQL, so no test waits for a clock."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable

import asyncpg
import pytest

from storage.api import BrokerEndpoint, TopicPartition
from storage.pg.cluster_store import ClusterStore, ensure_cluster_id
from storage.pg.schema import migrate

LEASE_MS = 60_000
T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


@pytest.fixture
async def pool(pg_url: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await asyncpg.create_pool(pg_url, min_size=1, max_size=4)
    async with pool.acquire() as conn:
        await migrate(conn)
        await add_topic(conn, "t", 2, replication_factor=3)
        await add_topic(conn, "u", 1)
    yield pool
    await pool.close()


async def add_topic(conn: asyncpg.Connection, name: str, partitions: int, replication_factor: int = 1) -> None:
    topic_id = uuid.uuid4()
    await conn.execute("INSERT INTO topics (name, topic_id, partitions, replication_factor) VALUES ($1, $2, $3, $4)",
                       name, topic_id, partitions, replication_factor)
    await conn.executemany("INSERT INTO partitions (topic_id, partition) VALUES ($1, $2)",
                           [(topic_id, p) for p in range(partitions)])


async def member(pool: asyncpg.Pool, node_id: int) -> ClusterStore:
    store = ClusterStore(pool, node_id, LEASE_MS)
    assert await store.register(BrokerEndpoint(node_id, "127.0.0.1", 9000 + node_id, None))
    return store


async def lapse(pool: asyncpg.Pool, node_id: int) -> None:
    """What a SIGSTOPped broker's lease does while it sleeps."""
    await pool.execute("UPDATE brokers SET lease_expires_at = now() - interval '1 second' WHERE node_id = $1", node_id)


async def leaders(store: ClusterStore) -> dict[TopicPartition, tuple[int, int]]:
    return {p.tp: (p.leader, p.leader_epoch) for p in (await store.snapshot()).partitions}


async def test_registered_brokers_are_live_until_they_leave(pool: asyncpg.Pool) -> None:
    one, two = await member(pool, 1), await member(pool, 2)
    snapshot = await one.snapshot()
    assert snapshot.brokers == [BrokerEndpoint(1, "127.0.0.1", 9001, None), BrokerEndpoint(2, "127.0.0.1", 9002, None)]
    assert snapshot.fenced == []
    assert await one.heartbeat() and await two.heartbeat()
    assert all(0 < left <= LEASE_MS for left in (await one.snapshot()).lease_left_ms.values())
    await two.deregister()
    left = await one.snapshot()
    # Still registered, its lease ended: DescribeCluster's fenced broker (KIP-1073).
    assert [b.node_id for b in left.brokers] == [1] and left.fenced == [BrokerEndpoint(2, "127.0.0.1", 9002, None)]
    assert set(left.lease_left_ms) == {1}
    assert not await two.heartbeat()


async def test_a_node_id_with_a_live_lease_cannot_register_again_until_it_lapses(pool: asyncpg.Pool) -> None:
    first = await member(pool, 1)
    restarted = ClusterStore(pool, 1, LEASE_MS)
    endpoint = BrokerEndpoint(1, "127.0.0.1", 9101, "r1")
    assert not await restarted.register(endpoint)
    await lapse(pool, 1)
    assert await restarted.register(endpoint)
    assert (await restarted.snapshot()).brokers == [endpoint]
    # The first incarnation's heartbeat finds its lease gone: it must drop everything.
    assert not await first.heartbeat()
    assert await restarted.heartbeat()


async def test_a_lapsed_lease_is_not_extended(pool: asyncpg.Pool) -> None:
    one = await member(pool, 1)
    await lapse(pool, 1)
    assert not await one.heartbeat()
    lapsed = await one.snapshot()
    assert lapsed.brokers == [] and [b.node_id for b in lapsed.fenced] == [1]
    assert await one.register(BrokerEndpoint(1, "127.0.0.1", 9001, None))
    assert await one.heartbeat()
    again = await one.snapshot()
    assert [b.node_id for b in again.brokers] == [1] and again.fenced == []


async def test_taking_free_partitions_bumps_their_epochs(pool: asyncpg.Pool) -> None:
    one, two = await member(pool, 1), await member(pool, 2)
    assert await leaders(one) == {T0: (-1, 0), T1: (-1, 0), U0: (-1, 0)}
    assert await one.take([T0, T1]) == {T0: 1, T1: 1}
    assert await two.take([T0, T1, U0]) == {U0: 1}  # a live leader's partitions are not free
    assert await leaders(two) == {T0: (1, 1), T1: (1, 1), U0: (2, 1)}
    assert {p.tp: p.replication_factor for p in (await one.snapshot()).partitions} == {T0: 3, T1: 3, U0: 1}


async def test_a_lapsed_leaders_partitions_move_and_its_old_epoch_is_powerless(pool: asyncpg.Pool) -> None:
    one, two = await member(pool, 1), await member(pool, 2)
    assert await one.take([T0]) == {T0: 1}
    await lapse(pool, 1)
    assert await leaders(two) == {T0: (-1, 1), T1: (-1, 0), U0: (-1, 0)}
    assert await two.take([T0]) == {T0: 2}
    # The paused broker wakes up: it cannot take anything back nor release what is no longer its.
    assert await one.take([T0, T1]) == {}
    assert await one.release([(T0, 1)]) == 0
    assert await leaders(two) == {T0: (2, 2), T1: (-1, 0), U0: (-1, 0)}


async def test_a_restarted_broker_takes_its_partitions_again_with_new_epochs(pool: asyncpg.Pool) -> None:
    one = await member(pool, 1)
    assert await one.take([T0, U0]) == {T0: 1, U0: 1}
    await lapse(pool, 1)  # killed with -9: its lease runs out
    again = await member(pool, 1)
    # Its rows still name node 1, which is live again, but the state behind epoch 1 is gone.
    assert await again.take([T0, U0]) == {T0: 2, U0: 2}


async def test_released_partitions_are_free_for_others(pool: asyncpg.Pool) -> None:
    one, two = await member(pool, 1), await member(pool, 2)
    assert await one.take([T0, T1]) == {T0: 1, T1: 1}
    assert await one.release([(T0, 1), (T1, 7)]) == 1  # epoch 7 was never ours: T1 stays
    assert await two.take([T0, T1]) == {T0: 2}
    assert await leaders(one) == {T0: (2, 2), T1: (1, 1), U0: (-1, 0)}


async def test_brokers_racing_for_partitions_each_get_a_partition_once(pool: asyncpg.Pool) -> None:
    stores = [await member(pool, n) for n in (1, 2, 3)]
    won = await asyncio.gather(*(s.take([T0, T1, U0]) for s in stores))
    taken = [tp for w in won for tp in w]
    assert sorted(taken) == sorted([T0, T1, U0])
    assert all(epoch == 1 for w in won for epoch in w.values())


async def test_a_broker_that_left_holds_nothing(pool: asyncpg.Pool) -> None:
    one, two = await member(pool, 1), await member(pool, 2)
    assert await one.take([T0]) == {T0: 1}
    await one.deregister()
    assert await one.take([T1]) == {}
    assert await two.take([T0]) == {T0: 2}


async def test_the_first_brokers_cluster_id_is_everyones(pool: asyncpg.Pool) -> None:
    assert await ensure_cluster_id(pool, "first") == "first"
    assert await ensure_cluster_id(pool, "second") == "first"


async def test_every_advertised_listener_is_registered_and_each_is_asked_by_name(pool: asyncpg.Pool) -> None:
    endpoint = BrokerEndpoint(1, "h1", 9092, None, (("CLIENT", "h1", 9092), ("INTERNAL", "10.0.0.1", 9093)))
    store = ClusterStore(pool, 1, LEASE_MS)
    assert await store.register(endpoint)
    [seen] = (await store.snapshot()).brokers
    assert seen == endpoint
    assert seen.on("INTERNAL") == BrokerEndpoint(1, "10.0.0.1", 9093, None, endpoint.listeners)
    assert seen.on("SASL_SSL") is None  # Metadata leaves it out for that listener's clients
    # A row written before the listeners were kept (schema 1): its one address serves every listener.
    await pool.execute("UPDATE brokers SET listeners = '[]' WHERE node_id = 1")
    [old] = (await store.snapshot()).brokers
    assert old.on("ANY") == BrokerEndpoint(1, "h1", 9092, None)


async def test_joins_takes_and_releases_are_heard_by_the_others_and_again_after_the_connection_broke(
        pool: asyncpg.Pool, pg_url: str) -> None:
    heard: list[str] = []
    one = ClusterStore(pool, 1, LEASE_MS, pg_url)
    await one.listen(lambda: heard.append("1"))
    assert await one.register(BrokerEndpoint(1, "127.0.0.1", 9001, None))
    assert await one.take([T0]) == {T0: 1}
    two = ClusterStore(pool, 2, LEASE_MS, pg_url)
    assert await two.register(BrokerEndpoint(2, "127.0.0.1", 9002, None))
    await until(lambda: heard == ["1"])  # 2 joined; its own notices are not heard by itself
    assert await one.release([(T0, 1)]) == 1
    await two.listen(lambda: heard.append("2"))
    assert await one.release([(T0, 1)]) == 0  # nothing released: no notice
    # The database drops the listening connection (as a restart does); listen() opens another.
    await pool.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'")
    await until(lambda: one._listener.is_closed())
    await one.listen(lambda: heard.append("1"))
    assert await two.take([T0]) == {T0: 2}
    assert await two.release([(T0, 2)]) == 1
    await until(lambda: heard == ["1", "1", "1"])  # 2's take and release
    assert await two.take([T1]) == {T1: 1}
    await until(lambda: heard == ["1", "1", "1", "1"])
    assert await one.take([T1]) == {}  # nothing taken: no notice
    await one.unlisten()
    await two.unlisten()
    assert heard == ["1", "1", "1", "1"]  # 2 never heard one's empty release or take, nor its own


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(20):
        while not condition():
            await asyncio.sleep(0.02)
