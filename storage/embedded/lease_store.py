"""Broker membership and partition leases of the processes of one
`--processes N` set sharing one local data dir, in SQLite (WAL) inside that dir -- the LeaseStore
that broker/cluster/member.py's ClusterMember runs on, as storage/pg/cluster_store.py is for
PostgreSQL. Same rules: a lease is a `brokers` row extended by heartbeats naming its incarnation;
a partition is taken by bumping its leader epoch only while the taker's lease is live and the
leader's is not (or the leader is us, from an earlier incarnation); released under the epoch held.

Time is CLOCK_MONOTONIC, which every process of one machine shares, with the boot id: a row
written before a reboot reads as lapsed. Every method is one SQLite transaction (BEGIN
IMMEDIATE: writers queue on the database lock, busy_timeout), run on a worker thread. Notices are
a counter bumped by each change, watched (listen) by the process's poll of cluster.db (db.py).

Not a fence for partition files: the leader epoch fences nothing on local disk. That is the
exclusive flock on the partition directory (partition_lock.py), taken when a process opens a
partition it was elected for and held until it closes it, so a paused process keeps everyone else
out until the supervisor kills it.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from ..api import BrokerEndpoint, ClusterSnapshot, PartitionLease, TopicPartition, Unregistered
from .db import SharedDb, bump

__all__ = ("EmbeddedLeaseStore", "LEADERSHIP_VERSION")

T = TypeVar("T")

LEADERSHIP_VERSION: Final = "leadership.version"  # bumped by every change of leaders or partitions


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


BOOT_ID: Final = _boot_id()


def _now() -> float:
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def _live(alias: str) -> str:
    return f"({alias}.lease_expires_at > ? AND {alias}.boot_id = ?)"


class EmbeddedLeaseStore:
    """One process's membership and partition leases in <data dir>/cluster.db."""

    def __init__(self, db: SharedDb, node_id: int, lease_ms: int, *, own_node: bool = False) -> None:
        """own_node: the caller holds its node's data-dir lock, so an earlier incarnation whose
        lease still reads live is dead (the kernel dropped its lock) and is replaced at once."""
        self.db = db
        self.own_node = own_node
        self.node_id = node_id
        self.lease_s = lease_ms / 1000
        self.incarnation: str | None = None
        self._listener: Callable[[], None] | None = None

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await self.db.run(work)

    async def register(self, endpoint: BrokerEndpoint) -> bool:
        incarnation = uuid.uuid4().hex

        def work(c: sqlite3.Connection) -> bool:
            now = _now()
            row = c.execute(f"SELECT 1 FROM brokers b WHERE node_id = ? AND {_live('b')}",
                            (self.node_id, now, BOOT_ID)).fetchone()
            if row is not None and not self.own_node:
                return False
            c.execute("INSERT OR REPLACE INTO brokers VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                      (self.node_id, incarnation, BOOT_ID, now + self.lease_s, endpoint.host, endpoint.port,
                       endpoint.rack, json.dumps([list(li) for li in endpoint.listeners])))
            _bump(c)
            return True

        if not await self._run(work):
            return False
        self.incarnation = incarnation
        return True

    async def heartbeat(self) -> bool:
        if self.incarnation is None:
            return False

        def work(c: sqlite3.Connection) -> bool:
            now = _now()
            return c.execute(f"UPDATE brokers AS b SET lease_expires_at = ? WHERE node_id = ? AND incarnation = ? "
                             f"AND {_live('b')}", (now + self.lease_s, self.node_id, self.incarnation, now,
                                                   BOOT_ID)).rowcount > 0

        return bool(await self._run(work))

    async def deregister(self) -> None:
        if self.incarnation is None:
            return
        incarnation, self.incarnation = self.incarnation, None

        def work(c: sqlite3.Connection) -> None:
            c.execute("UPDATE brokers SET lease_expires_at = ? WHERE node_id = ? AND incarnation = ?",
                      (_now(), self.node_id, incarnation))
            _bump(c)

        await self._run(work)

    async def unregister(self, node_id: int) -> Unregistered:
        def work(c: sqlite3.Connection) -> Unregistered:
            now = _now()
            if c.execute(f"SELECT 1 FROM brokers b WHERE node_id = ? AND {_live('b')}",
                         (node_id, now, BOOT_ID)).fetchone():
                return Unregistered.LIVE
            removed = c.execute("DELETE FROM brokers WHERE node_id = ?", (node_id,)).rowcount
            return Unregistered.REMOVED if removed else Unregistered.NOT_REGISTERED

        result: Unregistered = await self._run(work)
        return result

    async def snapshot(self) -> ClusterSnapshot:
        def work(c: sqlite3.Connection) -> ClusterSnapshot:
            now = _now()
            rows = c.execute("SELECT node_id, host, port, rack, listeners, lease_expires_at, boot_id FROM brokers "
                             "ORDER BY node_id").fetchall()
            live = {r[0] for r in rows if r[5] > now and r[6] == BOOT_ID}
            parts = c.execute("SELECT p.topic, p.partition, p.leader, p.leader_epoch, t.replication_factor "
                              "FROM partitions p JOIN topics t ON t.name = p.topic ORDER BY p.topic, p.partition")
            return ClusterSnapshot(
                brokers=[_endpoint(r) for r in rows if r[0] in live],
                partitions=[PartitionLease(TopicPartition(t, p), leader if leader in live else -1, epoch, rf)
                            for t, p, leader, epoch, rf in parts],
                lease_left_ms={r[0]: int((r[5] - now) * 1000) for r in rows if r[0] in live},
                fenced=[_endpoint(r) for r in rows if r[0] not in live])

        result: ClusterSnapshot = await self._run(work)
        return result

    async def take(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        wanted = list(partitions)
        if self.incarnation is None or not wanted:
            return {}
        incarnation = self.incarnation

        def work(c: sqlite3.Connection) -> dict[TopicPartition, int]:
            now = _now()
            if not c.execute(f"SELECT 1 FROM brokers b WHERE node_id = ? AND incarnation = ? AND {_live('b')}",
                             (self.node_id, incarnation, now, BOOT_ID)).fetchone():
                return {}
            taken = {}
            for tp in wanted:
                row = c.execute(
                    "UPDATE partitions SET leader = ?, leader_epoch = leader_epoch + 1 "
                    "WHERE topic = ? AND partition = ? AND (leader IS NULL OR leader = ? OR NOT EXISTS "
                    f"(SELECT 1 FROM brokers b WHERE b.node_id = partitions.leader AND {_live('b')})) "
                    "RETURNING leader_epoch", (self.node_id, tp.topic, tp.partition, self.node_id, now, BOOT_ID),
                ).fetchone()
                if row is not None:
                    taken[tp] = row[0]
            if taken:
                _bump(c)
            return taken

        result: dict[TopicPartition, int] = await self._run(work)
        return result

    async def release(self, held: Sequence[tuple[TopicPartition, int]]) -> int:
        if not held:
            return 0

        def work(c: sqlite3.Connection) -> int:
            released = sum(c.execute("UPDATE partitions SET leader = NULL WHERE topic = ? AND partition = ? "
                                     "AND leader = ? AND leader_epoch = ?",
                                     (tp.topic, tp.partition, self.node_id, epoch)).rowcount for tp, epoch in held)
            if released:
                _bump(c)
            return released

        result: int = await self._run(work)
        return result

    async def listen(self, callback: Callable[[], None]) -> None:
        if self._listener is None:
            self._listener = callback
            self.db.watch(LEADERSHIP_VERSION, callback)

    async def unlisten(self) -> None:
        if self._listener is not None:
            self.db.unwatch(LEADERSHIP_VERSION, self._listener)
            self._listener = None


def _bump(c: sqlite3.Connection) -> None:
    bump(c, LEADERSHIP_VERSION)


# Dynamic: a brokers row of cluster.db, its columns as SQLite returns them.
def _endpoint(row: Sequence[Any]) -> BrokerEndpoint:
    listeners = tuple((str(n), str(h), int(p)) for n, h, p in json.loads(row[4]))
    return BrokerEndpoint(row[0], row[1], row[2], row[3], listeners)
