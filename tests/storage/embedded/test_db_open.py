"""SharedDb.open() while another process holds the new database's write lock: processes of a set
starting together met "database is locked" at once (the switch to WAL does not wait on the busy
handler), and one of them exited at start-up."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from storage.embedded.db import DB_FILE, SharedDb


def test_open_waits_for_a_write_lock_on_a_database_not_yet_in_wal_mode(tmp_path: Path) -> None:
    other = sqlite3.connect(tmp_path / DB_FILE, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE started (x INTEGER)")  # a first process, before its switch to WAL
    other.execute("BEGIN IMMEDIATE")
    released = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    released.start()
    db = SharedDb(tmp_path)
    try:
        db.open()
        assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.conn.execute("SELECT count(*) FROM meta").fetchone()[0] >= 4  # the schema is in
    finally:
        released.join()
        db.close()
        other.close()
