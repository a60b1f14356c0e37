"""Fault injection at the storage seam: a PartitionLog that fails its appends until healed.

FaultyLogs wraps any LogSource (here the local LogManager) and hands out FaultyLog wrappers for
the partitions a test breaks; everything else passes through. The wrappers implement the
storage/api.py protocols, so the coordinators cannot tell them from the real logs.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from storage.api import (
    ActiveProducer,
    AppendOrigin,
    FetchDataInfo,
    IsolationLevel,
    LogAppendInfo,
    LogSource,
    OpenTransaction,
    PartitionLog,
    TopicMetadata,
    TopicPartition,
)


class FaultyLog:
    """Delegates to a real log; while failing, every append raises error() instead."""

    def __init__(self, inner: PartitionLog, error: Callable[[], Exception]) -> None:
        self.inner = inner
        self.error = error
        self.failing = True
        self.failures = 0
        self._changed = asyncio.Condition()
        self._notifying: set[asyncio.Task[None]] = set()

    def heal(self) -> None:
        self.failing = False

    def break_again(self) -> None:
        self.failing = True

    async def wait_failures(self, count: int) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self.failures >= count)

    async def append(self, records: bytes, origin: AppendOrigin = AppendOrigin.CLIENT) -> LogAppendInfo:
        if self.failing:
            self.failures += 1
            await self._notify()
            raise self.error()
        return await self.inner.append(records, origin)

    def submit(self, records: bytes | memoryview,
               origin: AppendOrigin = AppendOrigin.CLIENT) -> LogAppendInfo | asyncio.Future[LogAppendInfo]:
        """A Produce's append, or a coordinator's record: refused at once while failing."""
        if self.failing:
            self.failures += 1
            notify = asyncio.get_running_loop().create_task(self._notify())
            self._notifying.add(notify)
            notify.add_done_callback(self._notifying.discard)
            raise self.error()
        return self.inner.submit(records, origin)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    @property
    def log_start_offset(self) -> int:
        return self.inner.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.inner.log_end_offset

    @property
    def high_watermark(self) -> int:
        return self.inner.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.inner.last_stable_offset

    @property
    def size_bytes(self) -> int:
        return self.inner.size_bytes

    async def read(self, fetch_offset: int, max_bytes: int,
                   isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED, *,
                   min_one: bool = True) -> FetchDataInfo:
        return await self.inner.read(fetch_offset, max_bytes, isolation, min_one=min_one)

    async def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        return await self.inner.offset_for_timestamp(timestamp)

    async def offset_for_max_timestamp(self) -> tuple[int, int] | None:
        return await self.inner.offset_for_max_timestamp()

    async def delete_records_before(self, offset: int) -> int:
        return await self.inner.delete_records_before(offset)

    async def active_producers(self) -> list[ActiveProducer]:
        return await self.inner.active_producers()

    def open_transactions(self) -> list[OpenTransaction]:
        return self.inner.open_transactions()

    def has_open_transaction(self, producer_id: int, producer_epoch: int | None = None) -> bool:
        return self.inner.has_open_transaction(producer_id, producer_epoch)

    def add_waiter(self, waiter: asyncio.Future[None]) -> None:
        self.inner.add_waiter(waiter)

    def remove_waiter(self, waiter: asyncio.Future[None]) -> None:
        self.inner.remove_waiter(waiter)

    async def close(self) -> None:
        await self.inner.close()


class FaultyLogs:
    """A LogSource whose broken partitions fail their appends."""

    def __init__(self, inner: LogSource) -> None:
        self.inner = inner
        self.broken: dict[TopicPartition, FaultyLog] = {}

    def break_partition(self, tp: TopicPartition, error: Callable[[], Exception]) -> FaultyLog:
        self.broken[tp] = FaultyLog(self.inner.get_log(tp), error)
        return self.broken[tp]

    @property
    def data_dir(self) -> Path:
        return self.inner.data_dir

    @property
    def topics(self) -> Mapping[str, TopicMetadata]:
        return self.inner.topics

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return self.inner.topic_by_id(topic_id)

    async def lookup_topic(self, name: str) -> TopicMetadata | None:
        return await self.inner.lookup_topic(name)

    def topic_defaults(self) -> dict[str, str]:
        return self.inner.topic_defaults()

    def get_log(self, tp: TopicPartition) -> PartitionLog:
        inner = self.inner.get_log(tp)  # raises for a deleted topic, broken or not
        return self.broken.get(tp, inner)

    def open_transactions(self) -> Mapping[TopicPartition, list[OpenTransaction]]:
        return self.inner.open_transactions()

    def find_log(self, tp: TopicPartition) -> PartitionLog | None:
        return self.broken.get(tp) or self.inner.find_log(tp)

    async def create_topic(self, name: str, partitions: int, configs: Mapping[str, str] | None = None,
                           validate_only: bool = False) -> TopicMetadata:
        return await self.inner.create_topic(name, partitions, configs, validate_only)

    async def create_partitions(self, name: str, count: int, validate_only: bool = False) -> None:
        await self.inner.create_partitions(name, count, validate_only)

    async def alter_configs(self, name: str, configs: Mapping[str, str], validate_only: bool = False) -> None:
        await self.inner.alter_configs(name, configs, validate_only)

    async def delete_topic(self, name: str) -> None:
        await self.inner.delete_topic(name)

    async def set_log_defaults(self, log_defaults: Mapping[str, object]) -> None:
        await self.inner.set_log_defaults(log_defaults)

    async def enforce_retention(self) -> None:
        await self.inner.enforce_retention()


if TYPE_CHECKING:
    _log: type[PartitionLog] = FaultyLog
    _source: type[LogSource] = FaultyLogs
