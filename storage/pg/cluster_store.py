"""Broker membership and partition leases in PostgreSQL (docs/cluster.md, "Leadership").

Every time here is the database's now(), never a broker's clock. A broker's lease is its
`brokers` row: registered with a new incarnation, extended by heartbeats that name that
incarnation. A partition is led by `partitions.leader` while that broker's lease is live; taking
one bumps its leader epoch in one compare-and-set UPDATE, and that epoch is what fences the
appends of a leader that lost it (storage/pg's fenced append). No advisory lock is a fence here:
a paused process keeps its session and its locks.

The methods are single statements (or one read-only transaction), so any broker may run them
concurrently: PostgreSQL's row locks serialise two brokers taking one partition, and the loser's
re-checked WHERE clause finds the partition led.

A broker that joins, takes or releases partitions says so on LEADERSHIP_CHANNEL (NOTIFY, after its
statement committed), and every broker LISTENs there on a connection it holds for it: the others
balance at once instead of at their next round, up to cluster.lease.ms / 4 later, which left a
released partition without a leader meanwhile. A notice lost (no listening connection while the
database restarts) costs only that wait: the rounds still run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Final, TypeVar

from ..api import BrokerEndpoint, ClusterSnapshot, PartitionLease, TopicPartition, Unregistered
from .pool import Connection, Pool, Row, connect, lasting, within

__all__ = ("ClusterStore", "ensure_cluster_id", "ensure_record_storage")


T = TypeVar("T")
LEADERSHIP_CHANNEL: Final = "eos_leadership"
_NOTIFY: Final = "SELECT pg_notify($1, $2)"
_LISTEN_TIMEOUT_S: Final = 10.0

_LEASE: Final = "now() + make_interval(secs => $3::double precision / 1000)"

_REGISTER: Final = f"""
    INSERT INTO brokers AS b (node_id, incarnation, lease_expires_at, host, port, rack, listeners)
    VALUES ($1, $2, {_LEASE}, $4, $5, $6, $7::jsonb)
    ON CONFLICT (node_id) DO UPDATE
        SET incarnation = excluded.incarnation, lease_expires_at = excluded.lease_expires_at,
            host = excluded.host, port = excluded.port, rack = excluded.rack, listeners = excluded.listeners,
            registered_at = now()
        WHERE b.lease_expires_at <= now()
    RETURNING b.incarnation
"""

_HEARTBEAT: Final = f"""
    UPDATE brokers SET lease_expires_at = {_LEASE}
    WHERE node_id = $1 AND incarnation = $2 AND lease_expires_at > now()
"""

# Every registered broker; a lapsed lease (killed, paused, shut down) is a fenced broker.
_BROKERS: Final = """
    SELECT node_id, host, port, rack, listeners::text AS listeners, lease_expires_at > now() AS live,
           (extract(epoch FROM lease_expires_at - now()) * 1000)::bigint AS lease_left_ms
    FROM brokers ORDER BY node_id
"""

# A leader whose lease has lapsed reads as -1: any broker may take its partitions.
_PARTITIONS: Final = """
    SELECT t.name, p.partition, coalesce(b.node_id, -1) AS leader, p.leader_epoch, t.replication_factor
    FROM partitions p
    JOIN topics t ON t.topic_id = p.topic_id
    LEFT JOIN brokers b ON b.node_id = p.leader AND b.lease_expires_at > now()
    ORDER BY t.name, p.partition
"""

# Free, lapsed, or ours from an earlier incarnation (a restarted broker retakes its partitions
# with a new epoch, its in-memory state being gone); only while our own lease is live.
_TAKE: Final = """
    UPDATE partitions p SET leader = $1, leader_epoch = p.leader_epoch + 1
    FROM topics t, unnest($3::text[], $4::int[]) AS want (name, partition)
    WHERE t.topic_id = p.topic_id AND t.name = want.name AND p.partition = want.partition
      AND EXISTS (SELECT 1 FROM brokers me
                  WHERE me.node_id = $1 AND me.incarnation = $2 AND me.lease_expires_at > now())
      AND (p.leader IS NULL OR p.leader = $1
           OR NOT EXISTS (SELECT 1 FROM brokers b WHERE b.node_id = p.leader AND b.lease_expires_at > now()))
    RETURNING t.name, p.partition, p.leader_epoch
"""

# Under the epoch we hold: a partition someone else took since is left alone.
_RELEASE: Final = """
    UPDATE partitions p SET leader = NULL
    FROM topics t, unnest($2::text[], $3::int[], $4::int[]) AS held (name, partition, epoch)
    WHERE t.topic_id = p.topic_id AND t.name = held.name AND p.partition = held.partition
      AND p.leader = $1 AND p.leader_epoch = held.epoch
"""

_DEREGISTER: Final = """
    UPDATE brokers SET lease_expires_at = now()
    WHERE node_id = $1 AND incarnation = $2 AND lease_expires_at > now()
"""

# Only a lapsed lease's row goes (Kafka's unregistration of a fenced broker); the outer SELECT
# reads the rows as they were before the DELETE, so a live row still counts as live.
_UNREGISTER: Final = """
    WITH gone AS (DELETE FROM brokers WHERE node_id = $1 AND lease_expires_at <= now() RETURNING node_id)
    SELECT EXISTS (SELECT 1 FROM gone) AS removed,
           EXISTS (SELECT 1 FROM brokers WHERE node_id = $1 AND lease_expires_at > now()) AS live
"""


_CLUSTER_ID: Final = """
    WITH new AS (INSERT INTO cluster_meta (key, value) VALUES ('cluster.id', $1)
                 ON CONFLICT (key) DO NOTHING RETURNING value)
    SELECT value FROM new UNION ALL SELECT value FROM cluster_meta WHERE key = 'cluster.id'
"""


async def ensure_cluster_id(pool: Pool, proposed: str) -> str:
    """The cluster's id: the one stored, else proposed (the first broker's) stored now."""
    value: str = await pool.fetchval(_CLUSTER_ID, proposed)
    return value


async def ensure_record_storage(pool: Pool, proposed: str) -> str:
    """Where the cluster keeps its record data ('rows', or the object store's URL): the one stored,
    else proposed (the first broker's) stored now. Brokers of one cluster must agree."""
    value: str = await pool.fetchval(_CLUSTER_ID.replace("'cluster.id'", "'record.storage'"), proposed)
    return value


class ClusterStore:
    """One broker's membership and its partition leases; pool is an asyncpg Pool, url the
    database's (for the listening connection; None: no notices heard)."""

    def __init__(self, pool: Pool, node_id: int, lease_ms: int, url: str | None = None) -> None:
        self.pool = pool
        self.node_id = node_id
        self.lease_ms = lease_ms
        self.incarnation: uuid.UUID | None = None
        self._url = url
        self._listener: Connection | None = None  # the connection that LISTENs, while open

    async def register(self, endpoint: BrokerEndpoint) -> bool:
        """Join with a new incarnation and a fresh lease. False while another incarnation of this
        node id holds a live lease (a broker that was killed: its lease has to lapse first, or a
        second broker given the same node.id)."""
        incarnation = uuid.uuid4()
        row = await self._within_lease(self.pool.fetchrow(
            _REGISTER, self.node_id, incarnation, self.lease_ms, endpoint.host, endpoint.port, endpoint.rack,
            json.dumps([list(listener) for listener in endpoint.listeners])))
        if row is None:
            return False
        self.incarnation = incarnation
        await self._notify()
        return True

    async def heartbeat(self) -> bool:
        """Extend the lease; False if it had lapsed (or was taken over): register again."""
        if self.incarnation is None:
            return False
        status = await self._within_lease(self.pool.execute(_HEARTBEAT, self.node_id, self.incarnation,
                                                            self.lease_ms))
        return bool(_rows(status))

    async def _within_lease(self, statement: Awaitable[T]) -> T:
        """statement's answer, or OutOfTime after one lease: a heartbeat that late is no use (the lease
        ran out meanwhile by this broker's timer), and the next one, sent on a connection the pool opens
        again, finds the database as soon as it is back, not after the statement timeout. The statement is
        left to end by itself (within()); one that lands late extends the lease in the database only,
        which this broker's timer does not count, or registers an incarnation the next register waits out."""
        return await within(statement, lasting(self.lease_ms / 1000))

    async def deregister(self) -> None:
        """Leave: the lease ends now, so other brokers take this one's partitions at once."""
        if self.incarnation is not None:
            await self.pool.execute(_DEREGISTER, self.node_id, self.incarnation)
            self.incarnation = None

    async def unregister(self, node_id: int) -> Unregistered:
        """UnregisterBroker: a fenced broker's row is deleted; a live one is kept."""
        row = await self.pool.fetchrow(_UNREGISTER, node_id)
        assert row is not None  # a SELECT of subqueries answers one row
        if row["removed"]:
            return Unregistered.REMOVED
        return Unregistered.LIVE if row["live"] else Unregistered.NOT_REGISTERED

    async def snapshot(self) -> ClusterSnapshot:
        async with self.pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            rows = await conn.fetch(_BROKERS)
            partitions = await conn.fetch(_PARTITIONS)
        live = [r for r in rows if r["live"]]
        return ClusterSnapshot(
            brokers=[_endpoint(r) for r in live],
            partitions=[PartitionLease(TopicPartition(r["name"], r["partition"]), r["leader"], r["leader_epoch"],
                                       r["replication_factor"]) for r in partitions],
            lease_left_ms={r["node_id"]: r["lease_left_ms"] for r in live},
            fenced=[_endpoint(r) for r in rows if not r["live"]])

    async def take(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Lead those of the partitions that are free, lapsed or left from an earlier incarnation:
        their new leader epochs. Nothing while this broker's own lease is not live."""
        wanted = list(partitions)
        if self.incarnation is None or not wanted:
            return {}
        rows = await self.pool.fetch(_TAKE, self.node_id, self.incarnation,
                                     [tp.topic for tp in wanted], [tp.partition for tp in wanted])
        if rows:
            await self._notify()  # the others' Metadata answers name the new leader from their next round
        return {TopicPartition(r["name"], r["partition"]): r["leader_epoch"] for r in rows}

    async def release(self, held: Sequence[tuple[TopicPartition, int]]) -> int:
        """Stop leading these (partition, leader epoch) pairs; how many were still ours."""
        if not held:
            return 0
        status = await self.pool.execute(_RELEASE, self.node_id, [tp.topic for tp, _ in held],
                                         [tp.partition for tp, _ in held], [epoch for _, epoch in held])
        if released := _rows(status):
            await self._notify()
        return released

    async def listen(self, callback: Callable[[], None]) -> None:
        """Call `callback` when another broker joins or releases partitions, on a connection of its
        own (not the pool's: it outlives requests, and a database restart breaks it, not the pool).
        A no-op while that connection is open, so calling it again after the database came back
        listens anew; without a url, nothing (the rounds still run). Raises when the database
        does not answer."""
        if self._url is None or (self._listener is not None and not self._listener.is_closed()):
            return
        await self.unlisten()

        def heard(_conn: Connection, _pid: int, _channel: str, payload: str) -> None:
            if payload != str(self.node_id):
                callback()

        async with asyncio.timeout(_LISTEN_TIMEOUT_S):
            conn = await connect(self._url)
            try:
                await conn.add_listener(LEADERSHIP_CHANNEL, heard)
            except BaseException:
                conn.terminate()
                raise
        self._listener = conn

    async def unlisten(self) -> None:
        """Close the listening connection."""
        conn, self._listener = self._listener, None
        if conn is not None:
            try:
                async with asyncio.timeout(_LISTEN_TIMEOUT_S):
                    await conn.close()
            except Exception:
                conn.terminate()

    async def _notify(self) -> None:
        # Best effort: what it announces is done; a notice that cannot be sent is a round's wait.
        with contextlib.suppress(Exception):
            await self.pool.execute(_NOTIFY, LEADERSHIP_CHANNEL, str(self.node_id))


def _endpoint(row: Row) -> BrokerEndpoint:
    listeners = tuple((str(name), str(host), int(port)) for name, host, port in json.loads(row["listeners"]))
    return BrokerEndpoint(row["node_id"], row["host"], row["port"], row["rack"], listeners)


def _rows(status: str) -> int:
    """The row count of asyncpg's command status ("UPDATE 3")."""
    return int(status.rsplit(" ", 1)[-1])
