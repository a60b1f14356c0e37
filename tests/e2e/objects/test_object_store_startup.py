"""A cluster broker whose object store (cluster.object.store.url) cannot be used does not start: one
line naming the store and why, exit status 1, no traceback, nothing written."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import pytest

from storage.pg.schema import migrate
from tests.e2e.test_startup import refused, run_broker
from tests.pg_server import PostgresServer
from tests.s3_server import REGION, S3Server

pytestmark = pytest.mark.e2e


def _args(tmp_path: Path, pg_url: str, url: str, *settings: str) -> tuple[str, ...]:
    sets = [a for s in (f"cluster.url={pg_url}", f"cluster.object.store.url={url}", *settings) for a in ("--set", s)]
    return ("--port", "0", "--data-dir", str(tmp_path / "data"), *sets)


def test_an_unreachable_store_is_one_line_and_exit_1(tmp_path: Path, pg_url: str) -> None:
    with PostgresServer.unused_port() as port:
        args = _args(tmp_path, pg_url, "s3://bucket/prefix", f"cluster.object.store.endpoint=http://127.0.0.1:{port}",
                     f"cluster.object.store.region={REGION}")
        line = refused(tmp_path, *args)
        assert line.startswith("eosbroker: cannot use the object store at s3://bucket/prefix: "), line
        assert run_broker(*args).returncode == 1


def test_a_wrong_secret_is_one_line(tmp_path: Path, pg_url: str, s3_server: S3Server, s3_bucket: str,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    line = refused(tmp_path, *_args(tmp_path, pg_url, s3_server.url(s3_bucket),
                                    f"cluster.object.store.endpoint={s3_server.endpoint}"))
    assert line.startswith(f"eosbroker: cannot use the object store at s3://{s3_bucket}: "), line
    assert "not-the-secret" not in line


def test_a_store_url_without_a_cluster_database_is_refused(tmp_path: Path) -> None:
    line = refused(tmp_path, "--port", "0", "--data-dir", str(tmp_path / "data"),
                   "--set", f"cluster.object.store.url=file://{tmp_path}/objects")
    assert "cluster.object.store.url needs cluster.url" in line


def test_a_reachable_store_lets_the_broker_start(tmp_path: Path, pg_url: str, s3_server: S3Server,
                                                 s3_bucket: str, broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory({"cluster.url": pg_url, **s3_server.broker_settings(s3_bucket)})
    assert broker.proc is not None and broker.proc.poll() is None


def test_a_broker_whose_storage_differs_from_the_clusters_is_refused(tmp_path: Path, pg_url: str) -> None:
    async def rows_cluster() -> None:  # a cluster whose first broker kept record data in rows
        conn = await asyncpg.connect(pg_url)
        try:
            await migrate(conn)
            await conn.execute("INSERT INTO cluster_meta (key, value) VALUES ('record.storage', 'rows')")
        finally:
            await conn.close()

    asyncio.run(rows_cluster())
    run = tmp_path / "run"  # (the store's directory is outside: the probe object is written first)
    line = refused(run, *_args(run, pg_url, f"file://{tmp_path}/objects"))
    assert line.endswith(f"keeps record data in its rows, this broker in file://{tmp_path}/objects: give every "
                         "broker the same cluster.object.store.url"), line
