"""Cluster mode's start-up failures as an operator meets them: one line, a non-zero exit (1 when
the cluster database cannot be reached, as docs/cluster.md says), no traceback, nothing left on disk."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import pytest

from storage.pg.schema import MIGRATIONS, migrate
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
