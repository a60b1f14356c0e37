"""The SQL of topics: rows of `topics` and `partitions` (docs/cluster.md). Each change is one
transaction, so every broker sees a topic with all its partitions or not at all. A change of
partitions also notifies the brokers' leadership channel (cluster_store.py), on commit: each
broker balances at once and takes its share of new partitions, instead of at its next round (up
to cluster.lease.ms / 4 without a leader; Metadata said LEADER_NOT_AVAILABLE meanwhile)."""

from __future__ import annotations

import json
import uuid

import asyncpg  # type: ignore[import-untyped]

from protocol.errors import ErrorCode, KafkaError

from ..api import TopicMetadata
from .cluster_store import LEADERSHIP_CHANNEL
from .pool import Connection, Pool

__all__ = ("TopicStore",)


class TopicStore:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def load(self) -> dict[str, TopicMetadata]:
        rows = await self._pool.fetch("SELECT name, topic_id, partitions, configs FROM topics")
        return {r["name"]: TopicMetadata(name=r["name"], topic_id=r["topic_id"], partitions=r["partitions"],
                                         configs=json.loads(r["configs"])) for r in rows}

    async def create(self, meta: TopicMetadata, replication_factor: int) -> None:
        """TOPIC_ALREADY_EXISTS if another broker (or an earlier request) created it first."""
        async with self._pool.acquire() as conn, conn.transaction():
            try:
                await conn.execute(
                    "INSERT INTO topics (name, topic_id, partitions, replication_factor, configs) "
                    "VALUES ($1, $2, $3, $4, $5::jsonb)", meta.name, meta.topic_id, meta.partitions,
                    replication_factor, json.dumps(dict(meta.configs)))
            except asyncpg.UniqueViolationError:
                raise KafkaError(ErrorCode.topic_already_exists, f"topic {meta.name!r} already exists") from None
            await _add_partitions(conn, meta.topic_id, 0, meta.partitions)

    async def create_partitions(self, name: str, count: int) -> None:
        async with self._pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow("SELECT topic_id, partitions FROM topics WHERE name = $1 FOR UPDATE", name)
            if row is None:
                raise KafkaError(ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist")
            if count <= row["partitions"]:
                raise KafkaError(ErrorCode.invalid_partitions, f"topic {name!r} has {row['partitions']} "
                                 f"partitions; the new count {count} must be larger")
            await conn.execute("UPDATE topics SET partitions = $2 WHERE name = $1", name, count)
            await _add_partitions(conn, row["topic_id"], row["partitions"], count)

    async def alter_configs(self, name: str, configs: dict[str, str]) -> None:
        done = await self._pool.execute("UPDATE topics SET configs = $2::jsonb WHERE name = $1", name,
                                        json.dumps(configs))
        if done == "UPDATE 0":
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist")

    async def delete(self, name: str) -> uuid.UUID:
        """Delete the topic and everything stored for it. A leader's append racing with this finds
        its partition row gone: its fence fails and it writes nothing."""
        async with self._pool.acquire() as conn, conn.transaction():
            topic_id: uuid.UUID | None = await conn.fetchval(
                "DELETE FROM topics WHERE name = $1 RETURNING topic_id", name)
            if topic_id is None:
                raise KafkaError(ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist")
            for table in ("batches", "producer_snapshots", "aborted_txns"):
                await conn.execute(f"DELETE FROM {table} WHERE topic_id = $1", topic_id)
            await _notify(conn)
            return topic_id


async def _add_partitions(conn: Connection, topic_id: uuid.UUID, first: int, count: int) -> None:
    await conn.execute(
        "INSERT INTO partitions (topic_id, partition) SELECT $1, p FROM generate_series($2::int, $3::int - 1) AS p",
        topic_id, first, count)
    await _notify(conn)


async def _notify(conn: Connection) -> None:
    await conn.execute("SELECT pg_notify($1, 'partitions')", LEADERSHIP_CHANNEL)
