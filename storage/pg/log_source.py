"""The LogSource of cluster mode: topics and their configs live in PostgreSQL, and this broker holds
a PgPartitionLog for each partition it leads.

Topics: every broker of the cluster changes them in the database (storage/pg/topic_store.py) and
re-reads them every `refresh_interval_ms` (and at once after its own changes), so a topic created
through one broker is known to all within that interval; a config change reaches the logs this
broker leads then too, and a deleted topic's logs are dropped.

Leadership: the lease layer (docs/cluster.md) calls open_partition(tp, leader_epoch) once it has
taken a partition in the database, and close_partition(tp) when it gives one up or its lease
lapsed. get_log(tp) of an existing partition this broker does not lead is NOT_LEADER_OR_FOLLOWER.
A log whose append finds itself fenced drops out at once and the fenced-listeners are told, so the
lease layer can update its view and the coordinators resign.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from protocol.errors import ErrorCode, KafkaError

from ..api import (
    LeadershipListener,
    LogSource,
    PartitionLog,
    TopicMetadata,
    TopicPartition,
)
from ..log_config import check_topic_configs
from ..object_store import ObjectStore
from ..partition_logs import LedPartitionLogs, check_more_partitions, new_topic
from ..topic_checks import check_new_topic
from .group_commit import GroupCommitter
from .object_archive import DEFAULT_ARCHIVE, ArchivedPartition, ArchiveSettings, archive_loop
from .object_commit import DEFAULT_FLUSH, FlushSettings, ObjectGroupCommitter
from .object_gc import DEFAULT_ORPHAN_GRACE_MS, collect_loop
from .object_runs import DEFAULT_READ_CACHE_BYTES, ObjectPartitionStore, ObjectReader
from .partition_log import PRODUCER_SNAPSHOT_INTERVAL_BATCHES, PRODUCER_SNAPSHOT_INTERVAL_BYTES, PgPartitionLog
from .partition_store import PartitionStore
from .pool import OutOfTime, Pool, lasting, stop_tasks, within
from .topic_store import TopicStore

__all__ = ("PgLogSource",)

log = logging.getLogger(__name__)
# A Metadata request for a topic unknown here re-reads the topics at most this often.
_LOOKUP_MIN_INTERVAL_S: Final = 0.1
_TASKS_END_S: Final = 0.5  # close: how long the refresh and background tasks are waited for once cancelled
DEFAULT_REFRESH_INTERVAL_MS: Final = 1000


def _committer(pool: Pool, node_id: int, store: ObjectStore | None, flush: FlushSettings,
               concurrency: int) -> GroupCommitter:
    """With an object store record data goes there, the database keeps where; else rows."""
    if store is None:
        return GroupCommitter(pool, node_id, concurrency=concurrency)
    return ObjectGroupCommitter(pool, node_id, store, flush, concurrency=concurrency)


class PgLogSource(LedPartitionLogs[PgPartitionLog]):
    def __init__(
        self,
        pool: Pool,
        node_id: int,
        data_dir: Path,
        log_defaults: Mapping[str, object],
        producer_id_expiration_ms: int = 86_400_000,
        *,
        refresh_interval_ms: int = DEFAULT_REFRESH_INTERVAL_MS,
        snapshot_interval_bytes: int = PRODUCER_SNAPSHOT_INTERVAL_BYTES,
        snapshot_interval_batches: int = PRODUCER_SNAPSHOT_INTERVAL_BATCHES,
        commit_concurrency: int = 2,
        object_store: ObjectStore | None = None,
        flush: FlushSettings = DEFAULT_FLUSH,
        read_cache_bytes: int = DEFAULT_READ_CACHE_BYTES,
        orphan_grace_ms: int = DEFAULT_ORPHAN_GRACE_MS,
        archive: ArchiveSettings = DEFAULT_ARCHIVE,
    ) -> None:
        super().__init__(log_defaults, producer_id_expiration_ms)
        self.pool, self.node_id, self._data_dir = pool, node_id, data_dir
        self.reader = None if object_store is None else ObjectReader(object_store, read_cache_bytes)
        self._orphan_grace_ms = orphan_grace_ms
        self.archive = archive
        self.committer = _committer(pool, node_id, object_store, flush, commit_concurrency)
        self._topic_store = TopicStore(pool)
        self.change_bound_s: float | None = None  # how long a topic change is waited for (None: statement timeout)
        self._refresh_interval_ms = refresh_interval_ms
        self._snapshot_interval = (snapshot_interval_bytes, snapshot_interval_batches)
        self._tasks: set[asyncio.Task[None]] = set()
        self._refresher: asyncio.Task[None] | None = None
        self._background: list[asyncio.Task[None]] = []  # the object store's collector and archiver
        self._refresh_failing = False
        self._lookup: asyncio.Future[None] | None = None
        self._looked_up_at = 0.0

    # -- lifecycle ---------------------------------------------------------------------------

    async def load(self) -> None:
        """Read the topics (raises the driver's error if the database cannot be reached)."""
        self._topics = await self._topic_store.load()
        log.info("cluster database holds %d topics", len(self._topics))

    def start(self) -> None:
        self.committer.start()
        loop = asyncio.get_running_loop()
        self._refresher = loop.create_task(self._refresh_loop(), name="pg-topics")
        if self.reader is not None:
            store = self.reader.store
            self._background = [
                loop.create_task(collect_loop(self.pool, store, self._orphan_grace_ms), name="object-gc"),
                loop.create_task(archive_loop(self.pool, store, self.node_id, self.archive, self.archived),
                                 name="object-archive")]

    async def close(self) -> None:
        """Close every log (each stores a last producer snapshot), then the writer."""
        # Their statements may wait on a database that does not answer: the pool's close ends them.
        await stop_tasks([t for t in (self._refresher, *self._background) if t is not None], _TASKS_END_S)
        await self.close_all_partitions()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.committer.close()

    @property
    def data_dir(self) -> Path:
        return self._data_dir

    # -- leadership hooks (the lease layer calls these) -----------------------------------------

    async def open_partition(self, tp: TopicPartition, leader_epoch: int) -> PgPartitionLog:
        """Serve tp, which this broker has just taken at leader_epoch: rebuild its state from the
        database, then start its log. KafkaError NOT_LEADER_OR_FOLLOWER if the database says
        another broker leads it, KAFKA_STORAGE_ERROR if the database cannot be read."""
        old = self.logs.pop(tp, None)
        if old is not None:
            await old.close()
        meta = self._topics.get(tp.topic)
        if meta is None or tp.partition >= meta.partitions:
            meta = (await self.refresh_topics()).get(tp.topic)
        if meta is None or tp.partition >= meta.partitions:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"{tp} does not exist")
        plog = self._new_log(meta, tp, leader_epoch)
        try:
            await plog.load()
        except KafkaError:
            raise
        except Exception as exc:
            raise KafkaError(ErrorCode.kafka_storage_error, f"cannot load {tp} from the cluster database: "
                             f"{exc!r}") from exc
        plog.start()
        self.logs[tp] = plog
        log.info("%s: leading at epoch %d from offset %d (log start %d)", tp, leader_epoch,
                 plog.high_watermark, plog.log_start_offset)
        return plog

    def _new_log(self, meta: TopicMetadata, tp: TopicPartition, leader_epoch: int) -> PgPartitionLog:
        store = PartitionStore(self.pool, meta.topic_id, tp.partition) if self.reader is None \
            else ObjectPartitionStore(self.pool, meta.topic_id, tp.partition, self.reader)
        return PgPartitionLog(
            tp, store, self.committer, node_id=self.node_id,
            leader_epoch=leader_epoch, config=self.log_config(meta),
            producer_id_expiration_ms=self.producer_id_expiration_ms,
            snapshot_interval_bytes=self._snapshot_interval[0], snapshot_interval_batches=self._snapshot_interval[1],
            on_fenced=self._log_fenced)

    async def close_partition(self, tp: TopicPartition) -> None:
        """Stop serving tp (resigned, or the lease lapsed); idempotent."""
        plog = self.logs.pop(tp, None)
        if plog is not None:
            await plog.close()

    # The lease layer may hold the backend as a LeadershipListener (storage/api.py): election
    # opens the log, resignation closes it.
    async def on_elected(self, tp: TopicPartition, leader_epoch: int) -> None:
        await self.open_partition(tp, leader_epoch)

    async def on_resigned(self, tp: TopicPartition) -> None:
        await self.close_partition(tp)

    async def close_all_partitions(self) -> None:
        logs, self.logs = list(self.logs.values()), {}
        await asyncio.gather(*(plog.close() for plog in logs))

    def add_fenced_listener(self, listener: Callable[[TopicPartition], None]) -> None:
        """listener(tp) runs (on the event loop) when this broker stops leading tp without being
        asked: an append found that another broker took it, or its topic was deleted. The log is
        already dropped."""
        self._fenced_listeners.append(listener)

    def _log_fenced(self, plog: PgPartitionLog) -> None:
        if self.logs.get(plog.tp) is plog:
            del self.logs[plog.tp]
        self._spawn(plog.close())
        for listener in self._fenced_listeners:
            listener(plog.tp)

    def _spawn(self, coro: Coroutine[object, None, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- LogSource: logs -------------------------------------------------------------------------

    async def enforce_retention(self) -> None:
        now = int(time.time() * 1000)
        for plog in self._retained():
            try:
                await plog.enforce_retention(now)
            except KafkaError as exc:
                log.warning("%s: retention check failed: %s", plog.tp, exc)

    # -- LogSource: topic changes -----------------------------------------------------------------

    async def create_topic(self, name: str, partitions: int, configs: Mapping[str, str] | None = None,
                           validate_only: bool = False, *, replication_factor: int = 1) -> TopicMetadata:
        configs = check_new_topic(name, partitions, configs, self.log_defaults)
        try:
            async with self._changing:
                meta = new_topic(self._topics, name, partitions, configs)
                if validate_only:
                    return meta
                await self._write(self._topic_store.create(meta, replication_factor))
                self._topics[name] = meta
        except KafkaError as exc:
            if exc.code is ErrorCode.topic_already_exists and name not in self._topics:
                await self._learn_of(name)
            raise
        log.info("created topic %s with %d partitions (id %s)", name, partitions, meta.topic_id)
        return meta

    async def create_partitions(self, name: str, count: int, validate_only: bool = False) -> None:
        async with self._changing:
            meta = check_more_partitions(self._existing(name), count)
            if validate_only:
                return
            await self._write(self._topic_store.create_partitions(name, count))
            self._topics[name] = replace(meta, partitions=count)

    async def alter_configs(self, name: str, configs: Mapping[str, str], validate_only: bool = False) -> None:
        async with self._changing:
            meta = self._existing(name)
            check_topic_configs(self.log_defaults, configs)
            if validate_only:
                return
            await self._write(self._topic_store.alter_configs(name, dict(configs)))
            await self._adopt({**self._topics, name: replace(meta, configs=dict(configs))})

    async def delete_topic(self, name: str) -> None:
        async with self._changing:
            self._existing(name)
            await self._write(self._topic_store.delete(name))
            await self._adopt({n: m for n, m in self._topics.items() if n != name})
        log.info("deleted topic %s", name)

    async def _write(self, change: Awaitable[object]) -> None:
        """A topic change, waited for up to change_bound_s (a lease: a broker cut off from the database
        answers by then); its outcome is then unknown, as with Kafka's controller timing out."""
        try:
            await within(change, lasting(self.change_bound_s))
        except KafkaError:
            raise
        except OutOfTime as exc:
            raise KafkaError(ErrorCode.request_timed_out, "the cluster database did not confirm the change "
                             "within a lease (it may still be made)") from exc
        except Exception as exc:
            raise KafkaError(ErrorCode.kafka_storage_error, f"the cluster database did not take the "
                             f"change: {exc!r}") from exc

    # -- refresh: other brokers' changes ------------------------------------------------------------

    async def _refresh_loop(self) -> None:
        while True:
            await asyncio.sleep(self._refresh_interval_ms / 1000)
            try:
                await self.refresh_topics()
                await self._recover_stale_logs()
            except Exception as exc:
                if not self._refresh_failing:
                    log.warning("cannot read topics from the cluster database: %r", exc)
                self._refresh_failing = True
            else:
                self._refresh_failing = False

    def archived(self) -> list[ArchivedPartition]:
        """The partitions archiving may rewrite: those this broker leads, at the epoch it leads them."""
        return [ArchivedPartition(p.topic_id, tp.partition, p.leader_epoch, p.being_cleaned)
                for tp, p in self.logs.items() if not p.fenced]

    async def _recover_stale_logs(self) -> None:
        """Logs whose last write's outcome is unknown re-read their state (once the database
        answers again), so that what was committed becomes readable without a new append."""
        for plog in [p for p in self.logs.values() if p.stale]:
            try:
                await plog.recover()
            except KafkaError:
                pass  # still unreachable (the next round tries again), or fenced (then dropped)

    async def lookup_topic(self, name: str) -> TopicMetadata | None:
        """A topic not known here may have been created through another broker since the last
        refresh: re-read the topics (one query shared by concurrent callers, at most every
        _LOOKUP_MIN_INTERVAL_S, so clients asking for a missing topic cost little)."""
        if name in self._topics:
            return self._topics[name]
        if self._lookup is None:
            if time.monotonic() - self._looked_up_at < _LOOKUP_MIN_INTERVAL_S:
                return None
            self._lookup = asyncio.ensure_future(self._lookup_once(name))
        await asyncio.shield(self._lookup)
        return self._topics.get(name)

    async def _lookup_once(self, name: str) -> None:
        try:
            await self._learn_of(name)
        finally:
            self._lookup, self._looked_up_at = None, time.monotonic()

    async def _learn_of(self, name: str) -> None:
        """Another broker created the topic first (brokers starting together all create the
        internal topics): read it now, so that whoever gets TOPIC_ALREADY_EXISTS finds it."""
        try:
            await self.refresh_topics()
        except Exception as exc:  # the caller's error stands; the refresh loop tries again
            log.warning("cannot read topic %s from the cluster database: %r", name, exc)

    async def refresh_topics(self) -> Mapping[str, TopicMetadata]:
        topics = await self._topic_store.load()
        await self._adopt(topics)
        return self._topics

    async def _adopt(self, topics: dict[str, TopicMetadata]) -> None:
        """Take topics as the current set: logs of topics gone (or recreated under a new id) are
        closed, and logs whose topic configs changed adopt them."""
        old, self._topics = self._topics, topics
        for tp, plog in list(self.logs.items()):
            meta = topics.get(tp.topic)
            if meta is None or meta.topic_id != plog.topic_id:
                await self.close_partition(tp)
                for listener in self._fenced_listeners:
                    listener(tp)
            elif meta.configs != old.get(tp.topic, meta).configs:
                await self._update_config(tp, plog, meta)


if TYPE_CHECKING:  # the cluster backend implements the same seam (storage/api.py)
    _source: type[LogSource] = PgLogSource
    _listener: type[LeadershipListener] = PgLogSource
    _log: type[PartitionLog] = PgPartitionLog
