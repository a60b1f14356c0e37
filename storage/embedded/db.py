"""The SQLite database (WAL) that the processes of one `--processes N` set share in their data
dir, <data dir>/cluster.db: membership and partition leases (lease_store.py), topics, and the small
stores (stores.py). It plays the part PostgreSQL plays in cluster mode, for one machine.

Every change is one transaction (BEGIN IMMEDIATE: writers queue on the database lock, up to
busy_timeout) run on a worker thread, so the event loop never waits on the disk; each bumps a
version row of `meta`. Each process reads those rows every 50 ms in one query (watch_forever) and
calls the watchers of each row that moved (leadership, topics, security, broker configs), as the
PostgreSQL stores poll cluster_meta (storage/pg/polling.py). synchronous=NORMAL in WAL mode never tears the
database; a power loss may undo the last changes, which the segment files would lose too.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final, TypeVar

__all__ = ("DB_FILE", "WATCH_INTERVAL_S", "Rereader", "SharedDb", "bump")

log = logging.getLogger(__name__)
DB_FILE: Final = "cluster.db"
WATCH_INTERVAL_S: Final = 0.05
OPEN_RETRY_S: Final = 30.0  # as the busy timeout
T = TypeVar("T")

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS brokers (
    node_id INTEGER PRIMARY KEY, incarnation TEXT NOT NULL, boot_id TEXT NOT NULL,
    lease_expires_at REAL NOT NULL, host TEXT NOT NULL, port INTEGER NOT NULL, rack TEXT,
    listeners TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS topics (
    name TEXT PRIMARY KEY, topic_id TEXT NOT NULL, partitions INTEGER NOT NULL,
    replication_factor INTEGER NOT NULL, configs TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS partitions (
    topic TEXT NOT NULL REFERENCES topics(name) ON DELETE CASCADE, partition INTEGER NOT NULL,
    leader INTEGER, leader_epoch INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (topic, partition));
CREATE TABLE IF NOT EXISTS acls (binding TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS scram_credentials (
    username TEXT NOT NULL, mechanism TEXT NOT NULL, salt BLOB NOT NULL, stored_key BLOB NOT NULL,
    server_key BLOB NOT NULL, iterations INTEGER NOT NULL, PRIMARY KEY (username, mechanism));
CREATE TABLE IF NOT EXISTS broker_configs (
    entity TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (entity, name));
CREATE TABLE IF NOT EXISTS finalized_features (
    name TEXT PRIMARY KEY, level INTEGER NOT NULL, epoch INTEGER NOT NULL);
INSERT OR IGNORE INTO meta (key, value) VALUES ('leadership.version', '0'), ('topics.version', '0'),
    ('security.version', '0'), ('broker_configs.version', '0');
"""


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def _with_schema(path: Path) -> sqlite3.Connection:
    conn = connect(path)
    try:  # processes starting together create the tables once
        conn.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}COMMIT;")
    except BaseException:
        conn.close()
        raise
    return conn


def _retried(open_: Callable[[], sqlite3.Connection]) -> sqlite3.Connection:
    """open_() again while the file is locked: switching a new database to WAL, or recovering its
    WAL index, answers SQLITE_BUSY at once, without the busy handler (processes starting together
    met it: "database is locked" within a second, busy_timeout 30 s)."""
    deadline = time.monotonic() + OPEN_RETRY_S
    while True:
        try:
            return open_()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class SharedDb:
    """One process's connections to cluster.db: one for changes, one for reads (the polls)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / DB_FILE
        self._conn: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._watcher: sqlite3.Connection | None = None
        self._reading = threading.Lock()  # the polls' connection: one snapshot at a time
        self._writing = threading.Lock()  # the changes' connection: one transaction at a time
        self._lock = asyncio.Lock()  # queued on the event loop, not in worker threads
        self._watchers: dict[str, list[Callable[[], None]]] = {}

    def open(self) -> None:
        """Connect, creating the database and its tables if this is the set's first start."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn, self._reader = _retried(lambda: _with_schema(self.path)), _retried(lambda: connect(self.path))
        # The version rows are read on the event loop (a worker-thread hop 20 times a second
        # cost more than the read): a WAL reader waits only while a checkpoint resets the WAL,
        # and then this poll is skipped rather than waited for (timeout 0).
        self._watcher = sqlite3.connect(self.path, timeout=0, isolation_level=None, check_same_thread=False)

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise sqlite3.ProgrammingError(f"{self.path} is not open")
        return self._conn

    @property
    def reader(self) -> sqlite3.Connection:
        if self._reader is None:
            raise sqlite3.ProgrammingError(f"{self.path} is not open")
        return self._reader

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """work(connection) in one write transaction, on a worker thread."""
        async with self._lock:
            return await asyncio.to_thread(self.run_now, work)

    def run_now(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """The same on the caller's thread (start-up, before the event loop serves)."""
        with self._writing:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(self.conn)
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
            return result

    async def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """work(connection) in one read snapshot, on a worker thread."""
        def snapshot() -> T:
            with self._reading:
                self.reader.execute("BEGIN")
                try:
                    return work(self.reader)
                finally:
                    self.reader.execute("COMMIT")

        return await asyncio.to_thread(snapshot)

    def watch(self, key: str, callback: Callable[[], None]) -> None:
        """callback() on the event loop whenever the version row key moved (and at the first read)."""
        self._watchers.setdefault(key, []).append(callback)

    def unwatch(self, key: str, callback: Callable[[], None]) -> None:
        if callback in self._watchers.get(key, ()):
            self._watchers[key].remove(callback)

    async def watch_forever(self, interval_s: float = WATCH_INTERVAL_S) -> None:
        """Read every version row each interval, one query; tell the watchers of those that moved.
        Until cancelled; a database that cannot be read is one WARNING until it can again."""
        seen: dict[str, str] = {}
        failing = False
        while True:
            try:
                versions = self._versions()
            except sqlite3.Error as exc:
                # "locked": a checkpoint resets the WAL just now; read next time.
                if "locked" not in str(exc) and not failing:
                    log.warning("cannot read %s (%r); serving what was last read until it can", self.path, exc)
                    failing = True
            else:
                failing = False
                moved = [key for key, value in versions.items() if seen.get(key) != value]
                seen = versions
                for key in moved:
                    for callback in list(self._watchers.get(key, ())):
                        callback()
            await asyncio.sleep(interval_s)

    def _versions(self) -> dict[str, str]:
        if self._watcher is None:
            raise sqlite3.ProgrammingError(f"{self.path} is not open")
        rows = self._watcher.execute("SELECT key, value FROM meta WHERE key LIKE '%.version'").fetchall()
        return {str(k): str(v) for k, v in rows}

    def close(self) -> None:
        for conn in (self._conn, self._reader, self._watcher):
            if conn is not None:
                conn.close()
        self._conn = self._reader = self._watcher = None


def bump(c: sqlite3.Connection, *keys: str) -> None:
    """Move the version rows the other processes poll (inside the change's transaction)."""
    for key in keys:
        c.execute("INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT (key) DO UPDATE "
                  "SET value = CAST(value AS INTEGER) + 1", (key,))


class Rereader:
    """A watcher (SharedDb.watch) that re-reads something when its version row moved: one re-read
    at a time, another after it when the row moved meanwhile; a failure is one WARNING until a
    re-read succeeds again (what was last read keeps serving)."""

    def __init__(self, reread: Callable[[], Awaitable[object]], what: str) -> None:
        self._reread = reread
        self._what = what
        self._task: asyncio.Task[None] | None = None
        self._again = False
        self._failing = False

    def __call__(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"reread {self._what}")
        else:
            self._again = True

    async def _run(self) -> None:
        self._again = True
        while self._again:
            self._again = False
            try:
                await self._reread()
            except Exception as exc:
                if not self._failing:
                    log.warning("cannot re-read %s from the set's database (%r); serving the last ones read",
                                self._what, exc)
                self._failing = True
            else:
                self._failing = False

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
