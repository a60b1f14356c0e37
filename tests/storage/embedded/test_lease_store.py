"""ClusterMember (broker/cluster/member.py) over the embedded SQLite lease store, members in one
process standing for the processes of a set over one data dir, each with its own connections."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.cluster.member import ClusterMember
from storage.api import BrokerEndpoint, TopicMetadata, TopicPartition
from storage.embedded.db import SharedDb
from storage.embedded.lease_store import EmbeddedLeaseStore
from storage.embedded.topic_store import EmbeddedTopicStore
from tests.broker.test_cluster_member import Recorder, led, settle

LEASE_MS = 600_000


@pytest.fixture
def dbs(tmp_path: Path) -> Iterator[list[SharedDb]]:
    opened: list[SharedDb] = []
    for _ in range(3):
        db = SharedDb(tmp_path)
        db.open()
        opened.append(db)
    yield opened
    for db in opened:
        db.close()


async def add_topic(db: SharedDb, name: str, partitions: int) -> None:
    await EmbeddedTopicStore(db).create(TopicMetadata(name=name, topic_id=uuid.uuid4(), partitions=partitions), 1)


def endpoint(node_id: int) -> BrokerEndpoint:
    return BrokerEndpoint(node_id, "127.0.0.1", 9000 + node_id)


def member(db: SharedDb, node_id: int, events: list[tuple[str, ...]]) -> ClusterMember:
    return ClusterMember(EmbeddedLeaseStore(db, node_id, LEASE_MS), lambda: endpoint(node_id), LEASE_MS,
                         Recorder(f"logs{node_id}", events))


async def test_three_members_share_the_partitions_and_a_lapsed_one_loses_them(dbs: list[SharedDb]) -> None:
    await add_topic(dbs[0], "t", 6)
    events: list[tuple[str, ...]] = []
    members = [member(db, n, events) for n, db in zip((1, 2, 3), dbs, strict=True)]
    for m in members:
        await m.start()
    try:
        await settle(*members)
        shares = led(*members)
        assert sorted(len(v) for v in shares.values()) == [2, 2, 2], shares
        assert sorted(sum(shares.values(), [])) == [f"t-{p}" for p in range(6)]
        # Node 3's lease lapses (as a process paused past it): the others take its partitions at
        # new epochs, and its own take of them is refused.
        await dbs[0].run(lambda c: c.execute("UPDATE brokers SET lease_expires_at = 0 WHERE node_id = 3"))
        await settle(members[0], members[1])
        taken = sorted(led(members[0], members[1])[1] + led(members[0], members[1])[2])
        assert taken == [f"t-{p}" for p in range(6)]
        assert await members[2].store.take([TopicPartition("t", 0)]) == {}
    finally:
        for m in members:
            await m.stop()


async def test_a_node_holding_its_own_lock_replaces_its_live_earlier_incarnation(dbs: list[SharedDb]) -> None:
    """A restarted process holds its node's data-dir lock, so the incarnation whose lease still
    reads live is dead: it registers at once (a stranger with the same node id is refused)."""
    await add_topic(dbs[0], "t", 2)
    first = EmbeddedLeaseStore(dbs[0], 1, LEASE_MS)
    assert await first.register(endpoint(1))
    assert await first.take([TopicPartition("t", 0)]) == {TopicPartition("t", 0): 1}
    assert not await EmbeddedLeaseStore(dbs[1], 1, LEASE_MS).register(endpoint(1))
    again = EmbeddedLeaseStore(dbs[2], 1, LEASE_MS, own_node=True)
    assert await again.register(endpoint(1))
    assert not await first.heartbeat()  # the earlier incarnation is fenced
    assert await again.take([TopicPartition("t", 0)]) == {TopicPartition("t", 0): 2}
