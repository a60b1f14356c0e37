"""The contract of storage/api.py's PartitionLog runs against every backend: a test that takes
`any_log` runs once with the local segment files and once with the cluster's PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from storage.api import PartitionLog, TopicPartition
from storage.log_config import LogConfig
from storage.partition_log import LocalPartitionLog


@pytest.fixture(params=["local", "pg"])
async def any_log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[PartitionLog]:
    """Partition t-0 with Kafka's default configs, empty and started, on each backend."""
    if request.param == "local":
        plog = LocalPartitionLog(TopicPartition("t", 0), tmp_path / "t-0", LogConfig())
        plog.open(clean_shutdown=False)
        plog.start()
        yield plog
        await plog.close()
        return
    import asyncpg

    from storage.pg.log_source import PgLogSource
    from storage.pg.pool import create_pool
    from storage.pg.schema import migrate
    from tests.storage.pg.helpers import take

    pool = await create_pool(request.getfixturevalue("pg_url"), max_size=3)
    async with pool.acquire() as conn:
        await migrate(conn)
    source = PgLogSource(pool, 1, tmp_path, {})
    await source.load()
    source.start()
    await source.create_topic("t", 1)
    db: asyncpg.Pool = pool
    yield await take(db, source, TopicPartition("t", 0))
    await source.close()
    await pool.close()
