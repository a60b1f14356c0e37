"""All partition logs of the broker and the durable topic metadata (names, ids, partitions, configs).

Topic metadata lives in <log.dirs>/topics.json, replaced atomically (write, fsync, rename) on every
change. A clean shutdown leaves .kafka_cleanshutdown, as Kafka does, so the next start can skip
scanning the newest segments.

Topic changes are serialised by one lock and their file work (new partition directories and
segment files, topics.json, deleting a topic's directories) runs on a worker thread, so the event
loop never waits on the disk; a change is answered only once topics.json is durable.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import time
import uuid
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from protocol.errors import ErrorCode, KafkaError

from .api import (
    INTERNAL_TOPICS,
    LogSource,
    PartitionLog,
    TopicMetadata,
    TopicPartition,
    validate_topic_name,
)
from .fs import LOCAL_FS, FileSystem
from .log_config import check_topic_configs
from .partition_log import LocalPartitionLog
from .partition_logs import PartitionLogs, check_more_partitions, existing_topic, new_topic
from .topic_checks import check_new_topic

__all__ = ("LogManager", "TopicMetadata", "validate_topic_name", "INTERNAL_TOPICS")

log = logging.getLogger(__name__)
_CLEAN_SHUTDOWN: Final = ".kafka_cleanshutdown"


class LogManager(PartitionLogs[LocalPartitionLog]):
    def __init__(self, data_dir: Path, log_defaults: Mapping[str, object],
                 producer_id_expiration_ms: int = 86_400_000, fs: FileSystem = LOCAL_FS) -> None:
        super().__init__(log_defaults, producer_id_expiration_ms)
        self.data_dir = data_dir
        self.topics: dict[str, TopicMetadata] = {}
        self._started = False
        self._fs = fs

    # -- lifecycle ---------------------------------------------------------------------------

    def load(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        marker = self.data_dir / _CLEAN_SHUTDOWN
        clean = marker.exists()
        marker.unlink(missing_ok=True)
        path = self.data_dir / "topics.json"
        # No topics.json: no topic was ever created here, so there is no log to recover.
        history = "clean shutdown" if clean else "unclean shutdown" if path.exists() else "new data directory"
        if path.exists():
            for entry in json.loads(path.read_text())["topics"]:
                meta = TopicMetadata.from_json(entry)
                self.topics[meta.name] = meta
        for meta in self.topics.values():
            for p in range(meta.partitions):
                self._open_log(meta, p, clean)
        for leftover in self.data_dir.glob("*-delete"):
            shutil.rmtree(leftover, ignore_errors=True)
        log.info("loaded %d topics, %d partitions from %s (%s)", len(self.topics),
                 len(self.logs), self.data_dir, history)

    def start(self) -> None:
        self._started = True
        for plog in self.logs.values():
            plog.start()

    async def close(self) -> None:
        await asyncio.gather(*(plog.close() for plog in self.logs.values()))
        unclean = [str(tp) for tp, plog in self.logs.items() if not plog.closed_cleanly]
        if unclean:
            log.warning("not marking a clean shutdown: %d logs could not be flushed (%s); the next start "
                        "recovers them", len(unclean), ", ".join(unclean[:5]))
            return
        try:
            await asyncio.to_thread((self.data_dir / _CLEAN_SHUTDOWN).touch)
        except OSError as exc:
            log.warning("cannot write the clean-shutdown marker (the next start recovers every log): %s", exc)

    # -- topics ----------------------------------------------------------------------------------

    def _open_log(self, meta: TopicMetadata, partition: int, clean: bool) -> LocalPartitionLog:
        """Open (at load) a partition log and register it."""
        plog = self._new_log(meta, partition, clean)
        if self._started:
            plog.start()
        self.logs[plog.tp] = plog
        return plog

    def _new_log(self, meta: TopicMetadata, partition: int, clean: bool) -> LocalPartitionLog:
        tp = TopicPartition(meta.name, partition)
        plog = LocalPartitionLog(tp, self.data_dir / str(tp), self.log_config(meta),
                                 producer_id_expiration_ms=self.producer_id_expiration_ms, fs=self._fs)
        try:
            plog.open(clean_shutdown=clean)
        except OSError:
            plog.close_files()
            raise
        return plog

    async def _add_partitions(self, meta: TopicMetadata, first: int, topics: dict[str, TopicMetadata]) -> None:
        """Create partitions first..meta.partitions-1 and write topics.json as topics (which holds
        meta), both on a worker thread; only then are they registered. On failure nothing stays."""
        def files() -> list[LocalPartitionLog]:
            made: list[LocalPartitionLog] = []
            try:
                for p in range(first, meta.partitions):
                    made.append(self._new_log(meta, p, clean=True))
                self._write_topics(topics)
            except OSError:
                for plog in made:
                    plog.close_files()
                for p in range(first, meta.partitions):
                    shutil.rmtree(self.data_dir / str(TopicPartition(meta.name, p)), ignore_errors=True)
                raise
            return made

        try:
            made = await asyncio.to_thread(files)
        except OSError as exc:
            raise KafkaError(ErrorCode.kafka_storage_error,
                             f"cannot create partitions of {meta.name!r}: {exc}") from exc
        self.topics[meta.name] = meta
        for plog in made:
            self.logs[plog.tp] = plog
            if self._started:
                plog.start()

    def _write_topics(self, topics: Mapping[str, TopicMetadata]) -> None:
        """topics.json, durably (worker thread)."""
        data = json.dumps({"version": 1, "topics": [m.to_json() for m in topics.values()]}, indent=1)
        self._fs.write_atomically(self.data_dir / "topics.json", data.encode())

    async def _persist(self, topics: Mapping[str, TopicMetadata]) -> None:
        try:
            await asyncio.to_thread(self._write_topics, topics)
        except OSError as exc:
            raise KafkaError(ErrorCode.kafka_storage_error, f"cannot write topics.json: {exc}") from exc

    async def create_topic(self, name: str, partitions: int, configs: Mapping[str, str] | None = None,
                           validate_only: bool = False, *, replication_factor: int = 1) -> TopicMetadata:
        configs = check_new_topic(name, partitions, configs, self.log_defaults)
        async with self._changing:
            meta = new_topic(self.topics, name, partitions, configs)
            if validate_only:
                return meta
            await self._add_partitions(meta, 0, {**self.topics, name: meta})
        log.info("created topic %s with %d partitions (id %s)", name, partitions, meta.topic_id)
        return meta

    def _check_configs(self, configs: Mapping[str, str]) -> None:
        check_topic_configs(self.log_defaults, configs)

    def _existing(self, name: str) -> TopicMetadata:
        return existing_topic(self.topics, name)

    async def delete_topic(self, name: str) -> None:
        # The directories are renamed under the lock too: a topic created again under the name
        # reuses their paths, and a rename after the lock could take the new topic's directory.
        async with self._changing:
            meta = self._existing(name)
            await self._persist({n: m for n, m in self.topics.items() if n != name})
            del self.topics[name]
            plogs = [self.logs.pop(TopicPartition(name, p)) for p in range(meta.partitions)]
            for plog in plogs:
                await plog.close()
            await asyncio.to_thread(_remove_dirs, [p.directory for p in plogs], meta.topic_id)
        log.info("deleted topic %s", name)

    async def create_partitions(self, name: str, count: int, validate_only: bool = False) -> None:
        async with self._changing:
            meta = check_more_partitions(self._existing(name), count)
            if validate_only:
                return
            new = replace(meta, partitions=count)
            await self._add_partitions(new, meta.partitions, {**self.topics, name: new})

    async def alter_configs(self, name: str, configs: Mapping[str, str], validate_only: bool = False) -> None:
        """Replace the topic's own configs (those not given fall back to the broker defaults)."""
        async with self._changing:
            meta = self._existing(name)
            self._check_configs(configs)
            if validate_only:
                return
            new = replace(meta, configs=dict(configs))
            await self._persist({**self.topics, name: new})
            self.topics[name] = new
            cfg = self.log_config(new)
        for p in range(new.partitions):  # each log adopts it between two of its commands
            await self.logs[TopicPartition(name, p)].update_config(cfg)

    async def set_log_defaults(self, log_defaults: Mapping[str, object]) -> None:
        async with self._changing:
            self.log_defaults = dict(log_defaults)
            logs = list(self.logs.items())
        for tp, plog in logs:
            meta = self.topics.get(tp.topic)
            if meta is not None:
                await plog.update_config(self.log_config(meta))

    def get_log(self, tp: TopicPartition) -> LocalPartitionLog:
        plog = self.logs.get(tp)
        if plog is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"{tp} does not exist on this broker")
        return plog

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return self._by_id.lookup(self.topics, topic_id)

    async def lookup_topic(self, name: str) -> TopicMetadata | None:
        return self.topics.get(name)  # the only broker: nothing to learn from elsewhere

    async def enforce_retention(self) -> None:
        now = int(time.time() * 1000)
        for plog in self._retained():
            await plog.enforce_retention(now)


if TYPE_CHECKING:  # the local backend is the seam's first implementation (storage/api.py)
    _source: type[LogSource] = LogManager
    _log: type[PartitionLog] = LocalPartitionLog


def _remove_dirs(directories: list[Path], topic_id: uuid.UUID) -> None:
    """Rename each partition directory aside (a crash midway leaves "-delete" dirs that load()
    removes), then remove it."""
    for directory in directories:
        target = directory.with_name(f"{directory.name}.{topic_id.hex}-delete")
        directory.rename(target)
        shutil.rmtree(target, ignore_errors=True)
