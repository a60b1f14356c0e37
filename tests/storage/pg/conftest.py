"""Fixtures for the cluster backend against a real PostgreSQL server: a migrated database per
test, brokers' PgLogSources over it, and taking a partition as the lease layer does."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import asyncpg
import pytest

from storage.pg.log_source import PgLogSource
from storage.pg.pool import create_pool
from storage.pg.schema import migrate

SourceFactory = Callable[..., Awaitable[PgLogSource]]


@pytest.fixture
async def db(pg_url: str) -> AsyncIterator[asyncpg.Pool]:
    """A pool on a fresh, migrated database (the tests' own view: what is really stored)."""
    pool = await asyncpg.create_pool(pg_url, min_size=1, max_size=2)
    async with pool.acquire() as conn:
        await migrate(conn)
    yield pool
    await pool.close()


@contextlib.asynccontextmanager
async def started_sources(pg_url: str, tmp_path: Path, **defaults: object) -> AsyncIterator[SourceFactory]:
    """make(node_id, **kwargs): a started PgLogSource of broker node_id, each on its own pool,
    kwargs over `defaults`; all closed on leaving."""
    made: list[tuple[PgLogSource, asyncpg.Pool]] = []

    async def make(node_id: int = 1, **kwargs: object) -> PgLogSource:
        kwargs = defaults | kwargs
        pool = await create_pool(pg_url, max_size=4, command_timeout=kwargs.pop("command_timeout", 30))
        source = PgLogSource(pool, node_id, tmp_path, {}, **kwargs)  # type: ignore[arg-type]
        await source.load()
        source.start()
        made.append((source, pool))
        return source

    yield make
    for source, pool in made:
        await source.close()
        await pool.close()


@pytest.fixture
async def source_factory(pg_url: str, db: asyncpg.Pool, tmp_path: Path) -> AsyncIterator[SourceFactory]:
    """source_factory(node_id, **kwargs): a started PgLogSource of broker node_id."""
    async with started_sources(pg_url, tmp_path) as make:
        yield make


@pytest.fixture
async def source(source_factory: SourceFactory) -> PgLogSource:
    return await source_factory(1)
