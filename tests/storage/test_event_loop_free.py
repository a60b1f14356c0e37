"""Issue 9: no fsync, file creation, rename or deletion runs on the event loop thread. A
FileSystem that notes the thread of each such call watches a topic's whole life: creation,
appends that roll segments and flush on every message, DeleteRecords, retention, a config change,
deletion and shutdown."""

import threading
from pathlib import Path

from protocol.records import Record, build_batch
from storage.api import TopicPartition
from storage.fs import FileSystem
from storage.log_manager import LogManager


class LoopWatchingFileSystem(FileSystem):
    def __init__(self) -> None:
        super().__init__()
        self.loop_thread = threading.get_ident()
        self.watching = False
        self.on_loop: list[tuple[str, str]] = []
        self.off_loop: set[str] = set()

    def _note(self, op: str, path: object) -> None:
        if not self.watching:
            return
        if threading.get_ident() == self.loop_thread:
            self.on_loop.append((op, str(path)))
        else:
            self.off_loop.add(op)

    def open_append(self, path: Path) -> int:
        self._note("create", path)
        return super().open_append(path)

    def open_new(self, path: Path) -> int:
        self._note("create", path)
        return super().open_new(path)

    def fsync(self, fd: int) -> None:
        self._note("fsync", self.path_of(fd))
        super().fsync(fd)

    def replace(self, src: Path, dst: Path) -> None:
        self._note("rename", dst)
        super().replace(src, dst)

    def fsync_dir(self, directory: Path) -> None:
        self._note("fsync", directory)
        super().fsync_dir(directory)

    def unlink(self, path: Path) -> None:
        self._note("unlink", path)
        super().unlink(path)


def batch(i: int) -> bytes:
    return bytes(build_batch([Record(value=b"v%03d" % i + b"." * 100, timestamp=1000 + i)]))


async def test_issue_9_file_work_never_runs_on_the_event_loop_thread(tmp_path):
    fs = LoopWatchingFileSystem()
    logs = LogManager(tmp_path, {}, fs=fs)
    logs.load()
    logs.start()
    fs.watching = True
    await logs.create_topic("t", 2, {"segment.bytes": "400", "flush.messages": "1", "retention.bytes": "800"})
    plog = logs.get_log(TopicPartition("t", 0))
    for i in range(20):
        await plog.append(batch(i))
    assert len(plog.segments) > 3
    await plog.flush()
    await plog.delete_records_before(8)
    await logs.enforce_retention()
    await logs.alter_configs("t", {"segment.bytes": "800"})
    await logs.create_partitions("t", 3)
    await logs.delete_topic("t")
    await logs.create_topic("u", 1)
    await logs.close()
    assert fs.on_loop == []
    assert fs.off_loop == {"create", "fsync", "rename", "unlink"}
