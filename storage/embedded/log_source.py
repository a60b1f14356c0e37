"""The LogSource of a local set: processes sharing one data dir, each serving the partitions it
leads from the same segment files a single broker keeps (LocalPartitionLog, the hot path
unchanged), the topics in cluster.db (topic_store.py).

Leadership: the member (broker/cluster/member.py) calls on_elected(tp, epoch) once it has taken
a partition in cluster.db. The log is opened only under the partition's exclusive flock
(partition_lock.py); when another process still holds it (a paused or dying leader) the election
fails and the member hands the partition back. A clean close leaves `.clean` in the partition
dir; without it the log is recovered as after a crash (its newest segment scanned, a torn tail cut),
so offsets are never reused. `partition.metadata` (as Kafka's) names the topic id: a directory
left by a deleted topic of the same name is removed before a new topic's log opens there.

Topics: every process re-reads them when `topics.version` moved (its poll of cluster.db, db.py),
at once after its own changes and when asked for a topic it does not know.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from protocol.errors import ErrorCode, KafkaError

from ..api import LeadershipListener, LogSource, TopicMetadata, TopicPartition
from ..log_config import check_topic_configs
from ..partition_log import LocalPartitionLog
from ..partition_logs import LedPartitionLogs, check_more_partitions
from ..topic_checks import check_new_topic
from .db import Rereader
from .partition_lock import PartitionLock
from .topic_store import TOPICS_VERSION, EmbeddedTopicStore

__all__ = ("EmbeddedLogSource",)

log = logging.getLogger(__name__)
_CLEAN: Final = ".clean"
_PARTITION_METADATA: Final = "partition.metadata"
_LOOKUP_MIN_INTERVAL_S: Final = 0.05


class EmbeddedLogSource(LedPartitionLogs[LocalPartitionLog]):
    def __init__(self, store: EmbeddedTopicStore, data_dir: Path, log_defaults: Mapping[str, object],
                 producer_id_expiration_ms: int = 86_400_000) -> None:
        super().__init__(log_defaults, producer_id_expiration_ms)
        self.store = store
        self._data_dir = data_dir
        self._locks: dict[TopicPartition, PartitionLock] = {}
        self._topics_moved = Rereader(self.refresh_topics, "the topics")
        self._refreshing = asyncio.Lock()
        self._looked_up_at = 0.0

    @property
    def data_dir(self) -> Path:
        return self._data_dir

    # -- lifecycle ---------------------------------------------------------------------------

    def load(self) -> None:
        self._topics = self.store.load_now()
        for leftover in self._data_dir.glob("*-delete"):
            shutil.rmtree(leftover, ignore_errors=True)
        self._remove_orphans()
        log.info("the set's data dir %s holds %d topics", self._data_dir, len(self._topics))

    def _remove_orphans(self) -> None:
        """Remove the directories of topics deleted while no process could remove them (their
        leader was paused, then killed): each under its lock, checked against the topics read
        again then, as a topic created meanwhile is in cluster.db before any process claims a dir."""
        live = {meta.topic_id for meta in self._topics.values()}
        for directory in self._data_dir.iterdir():
            found = _topic_id(directory) if directory.is_dir() else None
            if found is None or found in live:
                continue
            lock = PartitionLock(self._data_dir, directory.name)
            if not lock.acquire():
                continue
            try:
                if found not in {meta.topic_id for meta in self.store.load_now().values()}:
                    log.info("removing %s, left by a deleted topic", directory.name)
                    _remove(directory, found)
            finally:
                lock.release()

    def start(self) -> None:
        self.store.db.watch(TOPICS_VERSION, self._topics_moved)

    async def close(self) -> None:
        self.store.db.unwatch(TOPICS_VERSION, self._topics_moved)
        await self._topics_moved.stop()
        await asyncio.gather(*(self.close_partition(tp) for tp in list(self.logs)))

    # -- leadership (the member calls these) ----------------------------------------------------

    async def on_elected(self, tp: TopicPartition, leader_epoch: int) -> None:
        meta = self._topics.get(tp.topic)
        if meta is None or tp.partition >= meta.partitions:
            meta = (await self.refresh_topics()).get(tp.topic)
        if meta is None or tp.partition >= meta.partitions:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"{tp} does not exist")
        lock = PartitionLock(self._data_dir, str(tp))
        if not await asyncio.to_thread(lock.acquire):
            raise KafkaError(ErrorCode.not_leader_or_follower, f"another process still holds {tp}'s files")
        try:
            plog = await asyncio.to_thread(self._open, meta, tp)
        except BaseException:
            lock.release()
            raise
        old = self.logs.pop(tp, None)
        if old is not None:  # cannot be: a partition is opened once per lock
            await old.close()
        plog.start()
        self.logs[tp], self._locks[tp] = plog, lock
        log.info("%s: leading at epoch %d from offset %d (log start %d)", tp, leader_epoch, plog.log_end_offset,
                 plog.log_start_offset)

    def _open(self, meta: TopicMetadata, tp: TopicPartition) -> LocalPartitionLog:
        """Open the log's files (worker thread, the lock held)."""
        directory = self._data_dir / str(tp)
        _claim(directory, meta.topic_id)
        marker = directory / _CLEAN
        clean = marker.exists()
        marker.unlink(missing_ok=True)
        plog = LocalPartitionLog(tp, directory, self.log_config(meta),
                                 producer_id_expiration_ms=self.producer_id_expiration_ms)
        try:
            plog.open(clean_shutdown=clean)
        except BaseException:
            plog.close_files()
            raise
        return plog

    async def on_resigned(self, tp: TopicPartition) -> None:
        await self.close_partition(tp)

    async def close_partition(self, tp: TopicPartition) -> None:
        """Close tp's log, then drop its lock (idempotent)."""
        plog, lock = self.logs.pop(tp, None), self._locks.pop(tp, None)
        try:
            if plog is not None:
                await plog.close()
                if plog.closed_cleanly:
                    await asyncio.to_thread((plog.directory / _CLEAN).touch)
        except OSError as exc:
            log.warning("%s: no clean-close marker (the next leader recovers it): %s", tp, exc)
        finally:
            if lock is not None:
                lock.release()

    def add_fenced_listener(self, listener: Callable[[TopicPartition], None]) -> None:
        """listener(tp) runs when this process stops leading tp unasked (its topic was deleted)."""
        self._fenced_listeners.append(listener)

    # -- LogSource: logs -------------------------------------------------------------------------

    async def lookup_topic(self, name: str) -> TopicMetadata | None:
        """A topic not known here may have been created by another process since the last poll."""
        if name not in self._topics and time.monotonic() - self._looked_up_at >= _LOOKUP_MIN_INTERVAL_S:
            self._looked_up_at = time.monotonic()
            await self.refresh_topics()
        return self._topics.get(name)

    async def enforce_retention(self) -> None:
        now = int(time.time() * 1000)
        for plog in self._retained():
            try:
                await plog.enforce_retention(now)
            except KafkaError:
                if self.logs.get(plog.tp) is plog:
                    raise  # else resigned meanwhile: its next leader enforces it

    # -- LogSource: topic changes -----------------------------------------------------------------

    async def create_topic(self, name: str, partitions: int, configs: Mapping[str, str] | None = None,
                           validate_only: bool = False, *, replication_factor: int = 1) -> TopicMetadata:
        configs = check_new_topic(name, partitions, configs, self.log_defaults)
        async with self._changing:
            if name in self._topics:
                raise KafkaError(ErrorCode.topic_already_exists, f"topic {name!r} already exists")
            meta = TopicMetadata(name=name, topic_id=uuid.uuid4(), partitions=partitions, configs=configs)
            if validate_only:
                return meta
            try:
                await self.store.create(meta, replication_factor)
            finally:
                await self.refresh_topics()  # also when another process created it first
        log.info("created topic %s with %d partitions (id %s)", name, partitions, meta.topic_id)
        return meta

    async def create_partitions(self, name: str, count: int, validate_only: bool = False) -> None:
        async with self._changing:
            check_more_partitions(self._existing(name), count)
            if validate_only:
                return
            await self.store.create_partitions(name, count)
            await self.refresh_topics()

    async def alter_configs(self, name: str, configs: Mapping[str, str], validate_only: bool = False) -> None:
        async with self._changing:
            self._existing(name)
            check_topic_configs(self.log_defaults, configs)
            if validate_only:
                return
            await self.store.alter_configs(name, dict(configs))
            await self.refresh_topics()

    async def delete_topic(self, name: str) -> None:
        async with self._changing:
            self._existing(name)
            await self.store.delete(name)
            await self.refresh_topics()
        log.info("deleted topic %s", name)

    # -- the other processes' changes ----------------------------------------------------------------

    async def refresh_topics(self) -> Mapping[str, TopicMetadata]:
        # One at a time: each snapshot is read after the last was adopted, so none is older than
        # what it replaces (a stale one would look like deleted topics, whose files go).
        async with self._refreshing:
            await self._adopt(await self.store.load())
        return self._topics

    async def _adopt(self, topics: dict[str, TopicMetadata]) -> None:
        """Take topics as the current set: a deleted topic's logs close and its directories go,
        logs whose topic configs changed adopt them."""
        old, self._topics = self._topics, topics
        for tp, plog in list(self.logs.items()):
            meta = topics.get(tp.topic)
            if meta is None or meta.topic_id != old.get(tp.topic, meta).topic_id:
                await self.close_partition(tp)
                for listener in self._fenced_listeners:
                    listener(tp)
            elif meta.configs != old.get(tp.topic, meta).configs:
                await self._update_config(tp, plog, meta)
        gone = [m for name, m in old.items() if name not in topics or topics[name].topic_id != m.topic_id]
        if gone:
            await asyncio.to_thread(self._remove_deleted, gone)

    def _remove_deleted(self, gone: list[TopicMetadata]) -> None:
        """Remove the directories of deleted topics that no process holds (worker thread); one held
        elsewhere is removed by its holder, or when a new topic of the name is led there."""
        for meta in gone:
            for p in range(meta.partitions):
                tp = TopicPartition(meta.name, p)
                directory = self._data_dir / str(tp)
                lock = PartitionLock(self._data_dir, str(tp))
                if not directory.exists() or tp in self.logs or not lock.acquire():
                    continue
                try:
                    if _topic_id(directory) in (None, meta.topic_id):
                        _remove(directory, meta.topic_id)
                finally:
                    lock.release()


def _topic_id(directory: Path) -> uuid.UUID | None:
    try:
        text = (directory / _PARTITION_METADATA).read_text()
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "topic_id":
            try:
                return uuid.UUID(value.strip())
            except ValueError:
                return None  # not one we wrote: left alone
    return None


def _claim(directory: Path, topic_id: uuid.UUID) -> None:
    """Make directory topic_id's: a deleted topic's files under the same name are removed first."""
    found = _topic_id(directory) if directory.exists() else None
    if found is not None and found != topic_id:
        _remove(directory, found)
    if found != topic_id:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / _PARTITION_METADATA).write_text(f"version: 0\ntopic_id: {topic_id}\n")


def _remove(directory: Path, topic_id: uuid.UUID) -> None:
    """Rename aside (a crash midway leaves a "-delete" dir that load removes), then remove."""
    target = directory.with_name(f"{directory.name}.{topic_id.hex}-delete")
    directory.rename(target)
    shutil.rmtree(target, ignore_errors=True)


if TYPE_CHECKING:  # the local set's backend implements the seam (storage/api.py)
    _source: type[LogSource] = EmbeddedLogSource
    _listener: type[LeadershipListener] = EmbeddedLogSource
