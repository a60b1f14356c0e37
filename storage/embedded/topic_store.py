"""Topics of a local set in cluster.db (db.py): rows of `topics` and `partitions`, as
storage/pg/topic_store.py keeps them in PostgreSQL. Each change is one transaction, so every process
sees a topic with all its partitions or not at all; it bumps `topics.version` (the log sources
re-read the topics) and the leadership version (every member balances at once and takes its share
of new partitions)."""

from __future__ import annotations

import json
import sqlite3
import uuid
from typing import Final

from protocol.errors import ErrorCode, KafkaError

from ..api import TopicMetadata
from .db import SharedDb, bump
from .lease_store import LEADERSHIP_VERSION

__all__ = ("TOPICS_VERSION", "EmbeddedTopicStore")

TOPICS_VERSION: Final = "topics.version"


def _unknown(name: str) -> KafkaError:
    return KafkaError(ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist")


class EmbeddedTopicStore:
    def __init__(self, db: SharedDb) -> None:
        self.db = db

    async def load(self) -> dict[str, TopicMetadata]:
        return await self.db.read(_load)

    def load_now(self) -> dict[str, TopicMetadata]:
        return self.db.run_now(_load)

    async def create(self, meta: TopicMetadata, replication_factor: int) -> None:
        """TOPIC_ALREADY_EXISTS if another process (or an earlier request) created it first."""
        def work(c: sqlite3.Connection) -> None:
            try:
                c.execute("INSERT INTO topics VALUES (?, ?, ?, ?, ?)",
                          (meta.name, str(meta.topic_id), meta.partitions, replication_factor,
                           json.dumps(dict(meta.configs))))
            except sqlite3.IntegrityError:
                raise KafkaError(ErrorCode.topic_already_exists, f"topic {meta.name!r} already exists") from None
            _add_partitions(c, meta.name, 0, meta.partitions)

        await self.db.run(work)

    async def create_partitions(self, name: str, count: int) -> None:
        def work(c: sqlite3.Connection) -> None:
            row = c.execute("SELECT partitions FROM topics WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise _unknown(name)
            if count <= row[0]:
                raise KafkaError(ErrorCode.invalid_partitions, f"topic {name!r} has {row[0]} partitions; the new "
                                 f"count {count} must be larger")
            c.execute("UPDATE topics SET partitions = ? WHERE name = ?", (count, name))
            _add_partitions(c, name, row[0], count)

        await self.db.run(work)

    async def alter_configs(self, name: str, configs: dict[str, str]) -> None:
        def work(c: sqlite3.Connection) -> None:
            if not c.execute("UPDATE topics SET configs = ? WHERE name = ?", (json.dumps(configs), name)).rowcount:
                raise _unknown(name)
            bump(c, TOPICS_VERSION)

        await self.db.run(work)

    async def delete(self, name: str) -> None:
        def work(c: sqlite3.Connection) -> None:
            if not c.execute("DELETE FROM topics WHERE name = ?", (name,)).rowcount:
                raise _unknown(name)
            bump(c, TOPICS_VERSION, LEADERSHIP_VERSION)

        await self.db.run(work)


def _load(c: sqlite3.Connection) -> dict[str, TopicMetadata]:
    rows = c.execute("SELECT name, topic_id, partitions, configs FROM topics").fetchall()
    return {name: TopicMetadata(name=name, topic_id=uuid.UUID(topic_id), partitions=partitions,
                                configs=json.loads(configs)) for name, topic_id, partitions, configs in rows}


def _add_partitions(c: sqlite3.Connection, name: str, first: int, count: int) -> None:
    c.executemany("INSERT INTO partitions (topic, partition) VALUES (?, ?)", [(name, p) for p in range(first, count)])
    bump(c, TOPICS_VERSION, LEADERSHIP_VERSION)
