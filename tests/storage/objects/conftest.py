"""The object store under test: the session's real S3 servers (SeaweedFS, tests/s3_server.py, and
versitygw, tests/versitygw_server.py) and a local directory (file:///DIR), each as
cluster.object.store.url would name it; and brokers' PgLogSources keeping their record data in it
(the fixtures of tests/storage/pg, object-stored). A test that takes s3_server runs over both."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import asyncpg
import pytest

from storage.api import TopicPartition
from storage.object_store import ObjectInfo, ObjectStore, ObstoreObjectStore, open_object_store
from storage.pg.log_source import PgLogSource
from storage.pg.object_commit import FlushSettings
from storage.pg.partition_log import PgPartitionLog
from tests.s3_server import REGION, LoopbackS3Server
from tests.storage.pg.conftest import SourceFactory, db, started_sources  # noqa: F401  (db: the migrated database)
from tests.storage.pg.helpers import take

TP = TopicPartition("t", 0)


class StoreWrapper:
    """The real store, passed through: tests override a call to inject a fault at the seam."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    @property
    def description(self) -> str:
        return self.store.description

    async def put(self, key: str, data: bytes | Sequence[bytes | memoryview]) -> None:
        await self.store.put(key, data)

    async def get_range(self, key: str, start: int, end: int) -> bytes:
        return await self.store.get_range(key, start, end)

    def list(self, prefix: str = "") -> AsyncIterator[list[ObjectInfo]]:
        return self.store.list(prefix)

    async def delete(self, keys: Sequence[str]) -> None:
        await self.store.delete(keys)


S3_SERVERS = ("seaweedfs", "versitygw")


@pytest.fixture(params=S3_SERVERS)
def s3_server(request: pytest.FixtureRequest) -> LoopbackS3Server:
    server: LoopbackS3Server = request.getfixturevalue(f"{request.param}_server")
    return server


@pytest.fixture(params=[*S3_SERVERS, "file"])
def object_store(request: pytest.FixtureRequest, tmp_path: Path) -> ObstoreObjectStore:
    if request.param == "file":
        return open_object_store(f"file://{tmp_path / 'objects'}")
    server: LoopbackS3Server = request.getfixturevalue(f"{request.param}_server")
    return open_object_store(server.url(server.new_bucket(), "cluster-a"), endpoint=server.endpoint, region=REGION)


@pytest.fixture
def s3_store(s3_server: LoopbackS3Server, s3_bucket: str) -> ObstoreObjectStore:
    return open_object_store(s3_server.url(s3_bucket), endpoint=s3_server.endpoint, region=REGION)


@pytest.fixture
async def source_factory(pg_url: str, db: asyncpg.Pool, tmp_path: Path,  # noqa: F811
                         s3_store: ObstoreObjectStore) -> AsyncIterator[SourceFactory]:
    """source_factory(node_id, **kwargs): a started PgLogSource of broker node_id whose record data
    goes to the session's S3 server (object_store= another store)."""
    async with started_sources(pg_url, tmp_path, object_store=s3_store, flush=FlushSettings(flush_ms=2)) as make:
        yield make


@pytest.fixture
async def source(source_factory: SourceFactory) -> PgLogSource:
    return await source_factory(1)


@pytest.fixture
async def plog(source: PgLogSource, db: asyncpg.Pool) -> PgPartitionLog:  # noqa: F811
    await source.create_topic("t", 3)
    return await take(db, source, TP)
