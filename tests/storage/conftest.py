"""The contract of storage/api.py's PartitionLog runs against every backend: a test that takes
`any_log` runs with the local segment files, with the cluster's PostgreSQL rows, and with PostgreSQL
holding where the data lies in an object store: a real S3 server (pg-seaweedfs, pg-versitygw) or a
directory (pg-file)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from storage.api import PartitionLog, TopicPartition
from storage.log_config import LogConfig
from storage.object_store import ObjectStore, open_object_store
from storage.partition_log import LocalPartitionLog
from tests.s3_server import REGION, LoopbackS3Server


@pytest.fixture(params=["local", "pg", "pg-seaweedfs", "pg-versitygw", "pg-file"])
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
    source = PgLogSource(pool, 1, tmp_path, {}, object_store=_object_store(request, tmp_path))
    await source.load()
    source.start()
    await source.create_topic("t", 1)
    db: asyncpg.Pool = pool
    yield await take(db, source, TopicPartition("t", 0))
    await source.close()
    await pool.close()


def _object_store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore | None:
    if request.param == "pg-file":
        return open_object_store(f"file://{tmp_path / 'objects'}")
    if request.param in ("pg-seaweedfs", "pg-versitygw"):
        server: LoopbackS3Server = request.getfixturevalue(f"{request.param.removeprefix('pg-')}_server")
        return open_object_store(server.url(server.new_bucket()), endpoint=server.endpoint, region=REGION)
    return None
