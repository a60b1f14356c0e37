"""The SQL of one partition besides appends (storage/pg/group_commit.py): reads of stored batches,
lookups by timestamp, the rows a new leader rebuilds its state from, producer snapshots, and moving
the log start offset (DeleteRecords, retention).

Rows below the high watermark never change (offsets are never reused), so reads need no lock and
run beside appends. Batches are served as stored: never decoded, except the one batch a timestamp
lookup searches, as Kafka does.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Final

from ..api import AbortedTxn
from .pool import Pool

__all__ = ("PartitionRow", "PartitionStore")

_READ_CHUNK: Final = 64  # rows per query of a read; more queries follow while max_bytes allows
_REPLAY_CHUNK: Final = 2000
# The batch holding offset $3: the newest batch that starts at or before it (the primary key's order).
_CONTAINING: Final = ("coalesce((SELECT max(base_offset) FROM batches WHERE topic_id = $1 AND partition = $2 "
                      "AND base_offset <= $3), $3)")
# Up to $5 batches from the one holding $3, but only as many as fit in $6 bytes (and the first one
# whatever its size when $7, KIP-74's minOneMessage): the sizes come from octet_length, which reads
# the stored length without fetching the value, so a fetch of one large batch does not pull $5 of
# them out of the database to keep one, and a batch that will not be sent is not fetched at all.
_READ: Final = ("SELECT last_offset, data FROM (SELECT last_offset, data, base_offset, octet_length(data) AS size, "
                "sum(octet_length(data)) OVER (ORDER BY base_offset) AS upto "
                "FROM (SELECT last_offset, data, base_offset FROM batches WHERE topic_id = $1 AND partition = $2 "
                f"AND base_offset >= {_CONTAINING} AND base_offset < $4 AND last_offset >= $3 "
                "ORDER BY base_offset LIMIT $5) AS c) AS s WHERE upto <= $6 OR (upto = size AND $7) "
                "ORDER BY base_offset")
# A batch's attributes are bytes 21-22 (big-endian); bit 5 marks a control batch, whose marker record
# recovery needs. Other batches are replayed from their 61-byte header alone.
_HEADER_OR_CONTROL: Final = ("CASE WHEN get_byte(data, 22) & 32 <> 0 THEN data "
                             "ELSE substring(data FROM 1 FOR 61) END")


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRow:
    leader: int | None
    leader_epoch: int
    next_offset: int
    log_start_offset: int
    cleaner_checkpoint: int  # the first dirty offset: where the cleaner's next pass starts


class PartitionStore:
    # Where moving the log start and retention find the stored batches and their sizes: rows of
    # `batches` here, runs of `batch_runs` for object-stored data (storage/pg/object_runs.py).
    table = "batches"
    _size = "octet_length(data)"

    def __init__(self, pool: Pool, topic_id: uuid.UUID, partition: int) -> None:
        self._pool = pool
        self.topic_id = topic_id
        self.partition = partition

    @property
    def pool(self) -> Pool:
        return self._pool

    async def partition_row(self) -> PartitionRow | None:
        row = await self._pool.fetchrow(
            "SELECT leader, leader_epoch, next_offset, log_start_offset, cleaner_checkpoint FROM partitions "
            "WHERE topic_id = $1 AND partition = $2", self.topic_id, self.partition)
        return None if row is None else PartitionRow(**dict(row))

    # -- reads -------------------------------------------------------------------------------

    async def read(self, fetch_offset: int, max_bytes: int, limit: int,
                   min_one: bool = True) -> tuple[list[bytes], int]:
        """Whole batches from the one holding fetch_offset, all starting below limit, within
        max_bytes but, when min_one, at least one (KIP-74). Returns them and one past the last
        offset returned."""
        out: list[bytes] = []
        size, position, next_offset = 0, fetch_offset, fetch_offset
        while position < limit:
            rows = await self._pool.fetch(_READ, self.topic_id, self.partition, position, limit, _READ_CHUNK,
                                          max_bytes - size, min_one and not out)
            for row in rows:
                if row["last_offset"] < position:
                    continue  # a batch that ends before fetch_offset (the containing one)
                if (out or not min_one) and size + len(row["data"]) > max_bytes:
                    return out, next_offset
                out.append(row["data"])
                size += len(row["data"])
                next_offset = row["last_offset"] + 1
            if len(rows) < _READ_CHUNK:
                break
            position = next_offset
        return out, next_offset

    async def batches_by_timestamp(self, timestamp: int, min_offset: int, limit: int) -> AsyncIterator[bytes]:
        """Batches whose max timestamp is at least timestamp, ending at or after min_offset and
        starting below limit, in offset order."""
        position = min_offset
        while True:
            rows = await self._pool.fetch(
                "SELECT last_offset, data FROM batches WHERE topic_id = $1 AND partition = $2 "
                "AND last_offset >= $3 AND base_offset < $4 AND max_timestamp >= $5 "
                "ORDER BY base_offset LIMIT 8", self.topic_id, self.partition, position, limit, timestamp)
            for row in rows:
                yield row["data"]
            if len(rows) < 8:
                return
            position = rows[-1]["last_offset"] + 1

    async def batch_with_max_timestamp(self, limit: int) -> bytes | None:
        """The first batch holding the partition's largest timestamp (ListOffsets -3)."""
        data: bytes | None = await self._pool.fetchval(
            "SELECT data FROM batches WHERE topic_id = $1 AND partition = $2 AND base_offset < $3 "
            "ORDER BY max_timestamp DESC, base_offset LIMIT 1", self.topic_id, self.partition, limit)
        return data

    async def first_header(self, offset: int) -> bytes | None:
        """The header of the first batch starting at or after offset."""
        data: bytes | None = await self._pool.fetchval(
            "SELECT substring(data FROM 1 FOR 61) FROM batches WHERE topic_id = $1 AND partition = $2 "
            "AND base_offset >= $3 ORDER BY base_offset LIMIT 1", self.topic_id, self.partition, offset)
        return data

    async def batch_at(self, offset: int) -> bytes | None:
        """The header (first 61 bytes) of the batch starting at offset."""
        data: bytes | None = await self._pool.fetchval(
            "SELECT substring(data FROM 1 FOR 61) FROM batches WHERE topic_id = $1 AND partition = $2 "
            "AND base_offset = $3", self.topic_id, self.partition, offset)
        return data

    # -- what a new leader rebuilds its state from -----------------------------------------------

    async def snapshots(self, upto_offset: int) -> AsyncIterator[tuple[int, bytes]]:
        """Producer snapshots at or below upto_offset, newest first."""
        rows = await self._pool.fetch(
            "SELECT end_offset, data FROM producer_snapshots WHERE topic_id = $1 AND partition = $2 "
            "AND end_offset <= $3 ORDER BY end_offset DESC", self.topic_id, self.partition, upto_offset)
        for row in rows:
            yield row["end_offset"], row["data"]

    async def replay_headers(self, start: int, end: int) -> AsyncIterator[bytes]:
        """From the batch holding start to end: each batch's header, whole for control batches."""
        position = start
        while position < end:
            rows = await self._pool.fetch(
                f"SELECT last_offset, {_HEADER_OR_CONTROL} AS head FROM batches WHERE topic_id = $1 "
                f"AND partition = $2 AND base_offset >= {_CONTAINING} AND base_offset < $4 "
                "ORDER BY base_offset LIMIT $5", self.topic_id, self.partition, position, end, _REPLAY_CHUNK)
            for row in rows:
                if row["last_offset"] >= position:
                    yield row["head"]
            if len(rows) < _REPLAY_CHUNK:
                return
            position = rows[-1]["last_offset"] + 1

    async def aborted_txns(self, from_offset: int) -> list[AbortedTxn]:
        rows = await self._pool.fetch(
            "SELECT producer_id, first_offset, last_offset, last_stable_offset FROM aborted_txns "
            "WHERE topic_id = $1 AND partition = $2 AND last_offset >= $3 ORDER BY last_offset",
            self.topic_id, self.partition, from_offset)
        return [AbortedTxn(**dict(r)) for r in rows]

    async def size_bytes(self) -> int:
        size: int = await self._pool.fetchval(
            f"SELECT coalesce(sum({self._size}), 0) FROM {self.table} WHERE topic_id = $1 AND partition = $2",
            self.topic_id, self.partition)
        return size

    # -- writes besides appends -------------------------------------------------------------------

    async def write_snapshot(self, end_offset: int, data: bytes) -> None:
        """Store a producer snapshot and drop the older ones: the state it holds is exact for the
        log below end_offset, which never changes, whoever leads the partition now."""
        await self._pool.execute(
            "WITH s AS (INSERT INTO producer_snapshots (topic_id, partition, end_offset, data) "
            "VALUES ($1, $2, $3, $4) ON CONFLICT (topic_id, partition, end_offset) DO UPDATE "
            "SET data = excluded.data RETURNING 1) "
            "DELETE FROM producer_snapshots WHERE topic_id = $1 AND partition = $2 AND end_offset < $3",
            self.topic_id, self.partition, end_offset, data)

    async def move_log_start(self, node_id: int, leader_epoch: int, offset: int) -> int | None:
        """Raise log_start_offset to offset (fenced like an append) and delete the batches and
        aborted transactions wholly below it. The bytes deleted, or None if fenced."""
        row = await self._pool.fetchrow(
            "WITH f AS (UPDATE partitions SET log_start_offset = greatest(log_start_offset, $5) "
            "  WHERE topic_id = $1 AND partition = $2 AND leader = $3 AND leader_epoch = $4 RETURNING 1), "
            f"d AS (DELETE FROM {self.table} WHERE topic_id = $1 AND partition = $2 AND last_offset < $5 "
            f"  AND EXISTS (SELECT 1 FROM f) RETURNING {self._size} AS size), "
            "a AS (DELETE FROM aborted_txns WHERE topic_id = $1 AND partition = $2 AND last_offset < $5 "
            "  AND EXISTS (SELECT 1 FROM f)) "
            "SELECT (SELECT count(*) FROM f) AS fenced_ok, (SELECT coalesce(sum(size), 0) FROM d) AS deleted",
            self.topic_id, self.partition, node_id, leader_epoch, offset)
        assert row is not None  # a SELECT of subqueries answers one row
        return int(row["deleted"]) if row["fenced_ok"] else None

    async def retention_start(self, cutoff_ms: int | None, retention_bytes: int | None,
                              high_watermark: int) -> int | None:
        """The first offset retention keeps: the first batch whose max timestamp is not before
        cutoff_ms (Kafka deletes from the oldest while expired), and the newest batch from which
        at least retention_bytes are kept; None: no limit applies."""
        targets: list[int] = []
        if cutoff_ms is not None:
            first_kept = await self._pool.fetchval(
                f"SELECT min(base_offset) FROM {self.table} WHERE topic_id = $1 AND partition = $2 "
                "AND max_timestamp >= $3", self.topic_id, self.partition, cutoff_ms)
            targets.append(high_watermark if first_kept is None else first_kept)
        if retention_bytes is not None:
            kept = await self._pool.fetchval(
                f"SELECT max(base_offset) FROM (SELECT base_offset, sum({self._size}) OVER "
                f"(ORDER BY base_offset DESC) AS suffix FROM {self.table} WHERE topic_id = $1 AND partition = $2) s "
                "WHERE suffix >= $3", self.topic_id, self.partition, retention_bytes)
            if kept is not None:
                targets.append(kept)
        return max(targets) if targets else None
