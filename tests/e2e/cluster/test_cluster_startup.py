"""Cluster mode's start-up failures as an operator meets them: one line, a non-zero exit (1 when
the cluster database cannot be reached, as docs/cluster.md says), no traceback, nothing left on disk."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import pytest

from storage.pg.schema import MIGRATIONS, migrate
from tests.e2e.cluster.conftest import CLUSTER_SETTINGS
from tests.e2e.test_startup import refused, run_broker
from tests.pg_server import PostgresServer

pytestmark = pytest.mark.e2e


def test_an_unreachable_database_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with PostgresServer.unused_port() as port:
        args = ("--port", "0", "--data-dir", str(tmp_path / "data"),
                "--set", f"cluster.url=postgresql://postgres:secret@127.0.0.1:{port}/eos")
        line = refused(tmp_path, *args)
        assert line.startswith(f"eosbroker: cannot reach the cluster database at postgresql://postgres:***@127.0.0.1:"
                               f"{port}/eos: "), line
        assert "secret" not in line
        assert run_broker(*args).returncode == 1


def test_a_database_migrated_by_a_newer_broker_is_refused(tmp_path: Path, pg_url: str) -> None:
    async def bump() -> None:
        conn = await asyncpg.connect(pg_url)
        try:
            await migrate(conn)
            await conn.execute("INSERT INTO schema_migrations (version) VALUES ($1)", len(MIGRATIONS) + 1)
        finally:
            await conn.close()

    asyncio.run(bump())
    line = refused(tmp_path, "--port", "0", "--data-dir", str(tmp_path / "data"), "--set", f"cluster.url={pg_url}")
    assert "upgrade the broker" in line


def test_a_second_broker_with_a_live_node_id_is_refused(cluster) -> None:  # type: ignore[no-untyped-def]
    cluster.start(1)
    result = run_broker("--port", "0", "--data-dir", str(cluster.root / "twin"), "--set", f"cluster.url={cluster.url}",
                        "--set", "node.id=1", *(a for k, v in CLUSTER_SETTINGS.items() for a in ("--set", f"{k}={v}")))
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip().splitlines() == [
        "eosbroker: node.id 1 is held by a live broker that keeps renewing its lease: give every broker of the "
        "cluster its own node.id"]
    assert "Traceback" not in result.stdout + result.stderr
    assert cluster.brokers_seen(1) == [1]  # the first one never noticed
