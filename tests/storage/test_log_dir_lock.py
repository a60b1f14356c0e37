"""LogDirLock: one holder per log directory; flock locks belong to the open file, so a second lock
in the same process conflicts just as a second broker process would."""

import os

import pytest

from storage.log_dir_lock import LOCK_FILE, LogDirInUseError, LogDirLock


def test_second_lock_on_a_directory_is_refused(tmp_path) -> None:
    data = tmp_path / "data"
    first = LogDirLock(data)
    first.acquire()  # creates the missing directory, as Kafka creates log.dirs
    assert (data / LOCK_FILE).read_text() == f"{os.getpid()}\n"
    with pytest.raises(LogDirInUseError, match=rf"data dir {data} is in use by another broker \(pid {os.getpid()}\)"):
        LogDirLock(data).acquire()
    first.release()
    again = LogDirLock(data)
    again.acquire()  # the file left behind does not block: only a held lock does
    again.release()


def test_release_is_idempotent(tmp_path) -> None:
    lock = LogDirLock(tmp_path)
    lock.release()
    lock.acquire()
    lock.release()
    lock.release()
