"""Migrations against a real PostgreSQL server: applied once, idempotent, concurrent-safe."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from storage.pg.schema import MIGRATIONS, SchemaTooNewError, migrate


async def test_migrate_creates_the_schema_once(pg_url: str) -> None:
    conn = await asyncpg.connect(pg_url)
    try:
        assert await migrate(conn) == len(MIGRATIONS)
        assert await migrate(conn) == len(MIGRATIONS)
        versions = await conn.fetch("SELECT version FROM schema_migrations ORDER BY version")
        assert [r["version"] for r in versions] == list(range(1, len(MIGRATIONS) + 1))
        tables = {r["tablename"] for r in await conn.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        assert {"brokers", "topics", "partitions", "batches", "producer_snapshots", "aborted_txns"} <= tables
    finally:
        await conn.close()


async def test_brokers_starting_together_apply_each_migration_once(pg_url: str) -> None:
    conns = [await asyncpg.connect(pg_url) for _ in range(4)]
    try:
        assert await asyncio.gather(*(migrate(c) for c in conns)) == [len(MIGRATIONS)] * 4
        assert await conns[0].fetchval("SELECT count(*) FROM schema_migrations") == len(MIGRATIONS)
    finally:
        for c in conns:
            await c.close()


async def test_a_newer_schema_is_refused(pg_url: str) -> None:
    conn = await asyncpg.connect(pg_url)
    try:
        await migrate(conn)
        await conn.execute("INSERT INTO schema_migrations (version) VALUES ($1)", len(MIGRATIONS) + 1)
        with pytest.raises(SchemaTooNewError, match="upgrade the broker"):
            await migrate(conn)
    finally:
        await conn.close()
