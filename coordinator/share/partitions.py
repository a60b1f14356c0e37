"""The share-partitions of this broker (Kafka's SharePartitionManager): each one's record states,
its initialisation, the reads that acquire records, acknowledgements, and their persistence.

A share-partition exists once its group coordinator initialized it (InitializeShareGroupState,
when it is first assigned to the group); before that it is refused, as Kafka's SharePartition
refuses one whose state its share coordinator will not read: UNKNOWN_SERVER_ERROR "Read operation
on uninitialized share partition not allowed." in a ShareFetch. Initialized with no start offset
(-1), it starts where share.auto.offset.reset says when first read (latest: the high watermark, or
the last stable offset under read_committed; earliest: the log start offset;
by_duration:<ISO-8601>: the first record at or after now minus that duration), else where its
persisted state says. Every
change other than an acquisition is written to __share_group_state (state_log.py) before the
caller is answered: Kafka's persister writes on acknowledgement, release and lock timeout, not
on acquisition. One lock per share-partition orders its changes and their writes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

from protocol.errors import ErrorCode, KafkaError
from storage.api import IsolationLevel, LogSource, TopicPartition

from .dead_letters import DeadLetterSource, DeadLetterTopicError, DeadLetterWriter
from .log_reads import LogRead, batches_covering, read_batches
from .partition_state import AcquiredRange, RecordState, SharePartitionState
from .settings import ShareGroupSettings, initial_offset
from .state_log import (
    UNINITIALIZED_START_OFFSET,
    SharePartitionKey,
    ShareStateStore,
    StoredShareState,
    delivery_complete_count,
)

__all__ = ("FetchedPartition", "SharePartition", "SharePartitionManager",
           "ShareGroupSettings", "UninitializedSharePartition")

log = logging.getLogger(__name__)

_READ_CAP: Final = 8 << 20


@dataclass(slots=True)
class SharePartition:
    key: SharePartitionKey
    tp: TopicPartition
    state: SharePartitionState
    state_epoch: int = 0
    leader_epoch: int = -1  # of tp here (cluster mode), which the share coordinator fences by
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass(slots=True)
class FetchedPartition:
    ranges: list[AcquiredRange] = field(default_factory=list)
    records: list[memoryview] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(r) for r in self.records)


def _configured(partition: SharePartition, settings: ShareGroupSettings) -> SharePartitionState:
    """The partition's state under the group's configs as they are now (they change at run time)."""
    state = partition.state
    state.delivery_count_limit, state.max_in_flight = settings.delivery_count_limit, settings.max_record_locks
    state.dead_letter_queue = bool(settings.dlq_topic)
    return state


_FENCED: Final = frozenset({ErrorCode.fenced_leader_epoch, ErrorCode.fenced_state_epoch})


class UninitializedSharePartition(KafkaError):
    """The share coordinator refused to read a share-partition never initialized (INVALID_REQUEST):
    as Kafka's SharePartition maps that persister error, UNKNOWN_SERVER_ERROR with its message."""

    def __init__(self, message: str | None) -> None:
        super().__init__(ErrorCode.unknown_server_error, message)


def _leadership_error(exc: KafkaError, tp: TopicPartition, leader_epoch: int) -> KafkaError:
    """The share coordinator's FENCED_LEADER_EPOCH (a newer leader) or FENCED_STATE_EPOCH (the
    state was altered) as the share-partition's clients get it: NOT_LEADER_OR_FOLLOWER, as Kafka's
    SharePartition maps them (they look for the leader again, which reads the state again)."""
    if exc.code not in _FENCED:
        return exc
    log.warning("share-partitions of %s fenced at leader epoch %d: no longer served here (%s)", tp, leader_epoch,
                exc.message)
    return KafkaError(ErrorCode.not_leader_or_follower, f"{tp} (leader epoch {leader_epoch}): {exc.message}")


class SharePartitionManager:
    def __init__(self, logs: LogSource, state_log: ShareStateStore, settings: Callable[[str], ShareGroupSettings],
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
                 dead_letters: DeadLetterWriter | None = None) -> None:
        self._logs = logs
        self._dead_letters = dead_letters
        # share-partitions with ARCHIVING records whose dead letters are still to be written
        # (loaded so, or their topic's log refused them): the timer task tries them again
        self.dead_letters_due: set[SharePartitionKey] = set()
        self._state_log = state_log
        self.settings = settings
        self._clock_ms = clock_ms
        self.partitions: dict[SharePartitionKey, SharePartition] = {}
        self.leader_epochs: dict[TopicPartition, int] = {}  # cluster mode: the partitions led here
        self._stored: dict[SharePartitionKey, StoredShareState] = {}
        self._available: set[asyncio.Future[None]] = set()  # woken when records go back
        self.locks_changed = asyncio.Event()  # new locks: the lock timer looks again

    async def load(self) -> None:
        self._stored = await self._state_log.load()
        self.dead_letters_due = {key for key, stored in self._stored.items()
                                 if any(b.state is RecordState.ARCHIVING for b in stored.batches)}

    def stored_keys(self) -> set[SharePartitionKey]:
        return set(self._stored) | set(self.partitions)

    def stored_state(self, key: SharePartitionKey) -> StoredShareState | None:
        partition = self.partitions.get(key)
        if partition is not None:
            state = partition.state
            return StoredShareState(partition.state_epoch, state.start_offset, tuple(state.snapshot()))
        return self._stored.get(key)

    async def partition(self, key: SharePartitionKey, tp: TopicPartition) -> SharePartition:
        partition = self.partitions.get(key)
        if partition is not None:
            return partition
        settings = self.settings(key.group_id)
        stored = self._stored.get(key)
        leader_epoch = self.leader_epochs.get(tp, -1)
        if stored is None:  # cluster mode: the share coordinator of the key has it
            stored = await self._read(key, tp, leader_epoch)
            if key in self.partitions:
                return self.partitions[key]
        start = stored.start_offset
        if start == UNINITIALIZED_START_OFFSET:
            start = await initial_offset(self._logs.get_log(tp), settings, self._clock_ms())
        state = SharePartitionState.restore(start, stored.batches, delivery_count_limit=settings.delivery_count_limit,
                                            max_in_flight=settings.max_record_locks,
                                            dead_letter_queue=bool(settings.dlq_topic))
        return self.partitions.setdefault(key, SharePartition(key, tp, state, stored.state_epoch, leader_epoch))

    async def _read(self, key: SharePartitionKey, tp: TopicPartition, leader_epoch: int) -> StoredShareState:
        try:
            return await self._state_log.read(key, leader_epoch)
        except KafkaError as exc:
            if exc.code is ErrorCode.invalid_request:  # never initialized: Kafka's ShareCoordinatorShard
                raise UninitializedSharePartition(exc.message) from None
            raise _leadership_error(exc, tp, leader_epoch) from None

    async def initialize(self, keys: Iterable[SharePartitionKey], state_epoch: int, start_offset: int) -> None:
        """InitializeShareGroupState at this broker's own __share_group_state (not cluster mode):
        the share-partitions start (again) at state_epoch and start_offset (-1: where
        share.auto.offset.reset says at their first read)."""
        for key in keys:
            stored = StoredShareState(state_epoch, start_offset, ())
            await self._state_log.write(key, stored)
            self._drop(key)
            self._stored[key] = stored

    # -- acquiring -----------------------------------------------------------------------------

    async def acquire(self, partition: SharePartition, member_id: str, max_records: int, max_bytes: int,
                      whole_batches: bool) -> FetchedPartition:
        """Lock available records first (those released or timed out), then new ones."""
        settings = self.settings(partition.key.group_id)
        plog = self._logs.get_log(partition.tp)
        async with partition.lock:
            state = _configured(partition, settings)
            state.move_start(plog.log_start_offset)
            now = self._clock_ms()
            lock_ms = settings.record_lock_duration_ms
            ranges = state.acquire_available(member_id, now, lock_ms, max_records)
            taken = sum(r.last_offset - r.first_offset + 1 for r in ranges)
            read = LogRead()
            if taken < max_records and not state.window_full():
                read = await read_batches(plog, state.end_offset, min(max_bytes, _READ_CAP),
                                          settings.isolation_level)
                ranges += state.acquire_new(read.batches, member_id, now, lock_ms, max_records - taken,
                                            whole_batches)
            records = await batches_covering(plog, ranges, read, min(max_bytes, _READ_CAP))
        if ranges:
            self.locks_changed.set()
        return FetchedPartition(ranges, records)

    def has_available(self, partition: SharePartition) -> bool:
        plog = self._logs.get_log(partition.tp)
        committed = self.settings(partition.key.group_id).isolation_level is IsolationLevel.READ_COMMITTED
        end = plog.last_stable_offset if committed else plog.high_watermark
        state = partition.state
        return state.has_available() or (end > state.end_offset and not state.window_full())

    async def wait(self, partitions: Iterable[SharePartition], timeout_s: float) -> None:
        """Until a record may be acquired from one of the partitions, or timeout_s."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        logs = [self._logs.get_log(p.tp) for p in partitions]
        for plog in logs:
            plog.add_waiter(waiter)
        self._available.add(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout_s)
        except TimeoutError:
            pass
        finally:
            self._available.discard(waiter)
            for plog in logs:
                plog.remove_waiter(waiter)

    def _wake(self) -> None:
        for waiter in self._available:
            if not waiter.done():
                waiter.set_result(None)

    # -- acknowledging, releasing --------------------------------------------------------------

    async def acknowledge(self, partition: SharePartition, member_id: str,
                          batches: Iterable[tuple[int, int, tuple[int, ...]]]) -> None:
        """Apply the batches in order and persist; KafkaError (INVALID_RECORD_STATE...) stops at
        the batch that fails, the earlier ones staying applied and written, as in Kafka."""
        settings = self.settings(partition.key.group_id)
        lock_ms = settings.record_lock_duration_ms
        async with partition.lock:
            _configured(partition, settings)
            try:
                for first, last, types in batches:
                    partition.state.acknowledge(member_id, first, last, types, self._clock_ms(), lock_ms)
            finally:
                await self._persist(partition)
        self._wake()

    async def release_member(self, group_id: str, member_id: str) -> int:
        released = 0
        for partition in [p for p in self.partitions.values() if p.key.group_id == group_id]:
            async with partition.lock:
                count = _configured(partition, self.settings(group_id)).release_member(member_id)
                if count:
                    try:
                        await self._persist(partition)
                    except KafkaError as exc:  # fenced: dropped here, the others are still released
                        if self.partitions.get(partition.key) is partition:
                            raise
                        log.info("share-partition %s: %s", partition.key, exc.message)
            released += count
        if released:
            self._wake()
        return released

    async def expire_locks(self) -> float | None:
        """Release every lock that ran out; the seconds until the next one runs out, if any."""
        now = self._clock_ms()
        deadlines = []
        for partition in list(self.partitions.values()):
            next_deadline = partition.state.next_deadline_ms()
            if next_deadline is not None and next_deadline <= now:
                async with partition.lock:
                    state = _configured(partition, self.settings(partition.key.group_id))
                    if state.expire_locks(self._clock_ms()):
                        await self._persist(partition)
                        self._wake()
                next_deadline = partition.state.next_deadline_ms()
            if next_deadline is not None:
                deadlines.append(next_deadline)
        return max(0.0, (min(deadlines) - self._clock_ms()) / 1000) if deadlines else None

    async def _persist(self, partition: SharePartition) -> None:
        """Write the state; then write the dead letters it holds and the state that archives them.
        A kill -9 between the two writes makes the restarted broker write those dead letters
        again, as Kafka's resumed archiving does (at least once, never lost)."""
        await self._write_state(partition)
        if await self._send_dead_letters(partition):
            await self._write_state(partition)

    async def _write_state(self, partition: SharePartition) -> None:
        """A write refused as from an older leader (FENCED_LEADER_EPOCH: a newer leader of tp has
        read or written the state) or an older state (FENCED_STATE_EPOCH: the group's offsets were
        altered) drops the share-partition here, as a resignation does, and fails as
        NOT_LEADER_OR_FOLLOWER (as Kafka's SharePartition): what it changed is not answered as done."""
        state = partition.state
        stored = StoredShareState(partition.state_epoch, state.start_offset, tuple(state.snapshot()),
                                  partition.leader_epoch)
        try:
            await self._state_log.write(partition.key, stored)
        except KafkaError as exc:
            if exc.code in _FENCED:
                if self.partitions.get(partition.key) is partition:  # not one made since
                    self._drop(partition.key)
                self._wake()
            raise _leadership_error(exc, partition.tp, partition.leader_epoch) from None

    async def _send_dead_letters(self, partition: SharePartition) -> bool:
        """Write the ARCHIVING records' dead letters and archive them; False if none were due or
        the topic's log refused them (they stay due)."""
        state, key = partition.state, partition.key
        ranges = state.dead_letters()
        self.dead_letters_due.discard(key)
        if not ranges:
            return False
        settings = self.settings(key.group_id)
        if settings.dlq_topic and self._dead_letters is not None:
            source = DeadLetterSource(key.group_id, partition.tp, settings.dlq_topic, settings.dlq_copy_record)
            try:
                await self._dead_letters.write(source, ranges)
            except DeadLetterTopicError as exc:
                log.warning("%s Archiving %s offsets %d-%d without dead letters.", exc, partition.tp,
                            ranges[0].first_offset, ranges[-1].last_offset)
            except KafkaError as exc:
                log.warning("share group %s: dead letters of %s not written (%s); trying again",
                            key.group_id, partition.tp, exc)
                self.dead_letters_due.add(key)
                return False
        for r in ranges:
            state.archive_dead_letters(r.first_offset, r.last_offset)
        return True

    async def send_due_dead_letters(self) -> None:
        """The dead letters of partitions restored ARCHIVING, or refused before (the timer's)."""
        for key in list(self.dead_letters_due):
            meta = next((m for m in self._logs.topics.values() if m.topic_id == key.topic_id), None)
            if meta is None or key.partition >= meta.partitions:
                self.dead_letters_due.discard(key)
                continue
            partition = await self.partition(key, TopicPartition(meta.name, key.partition))
            async with partition.lock:
                _configured(partition, self.settings(key.group_id))
                if await self._send_dead_letters(partition):
                    await self._write_state(partition)
            self._wake()

    # -- administration ------------------------------------------------------------------------

    async def alter_start(self, key: SharePartitionKey, tp: TopicPartition, offset: int) -> None:
        """AlterShareGroupOffsets (the group has no members): start again at offset (a
        share-partition never initialized is initialized so)."""
        plog = self._logs.get_log(tp)
        start = min(max(offset, plog.log_start_offset), plog.high_watermark)
        if key not in self.partitions and key not in self._stored:
            stored = StoredShareState(0, start, ())
            await self._state_log.write(key, stored)
            self._stored[key] = stored
            return
        partition = await self.partition(key, tp)
        async with partition.lock:
            partition.state.reset(start)
            partition.state_epoch += 1
            await self._persist(partition)

    def forget(self, tp: TopicPartition) -> None:
        """This broker no longer leads tp: its share-partitions go (their states are written; what
        was acquired here comes back at the new leader, as after a crash)."""
        self.leader_epochs.pop(tp, None)
        for key in [k for k, p in self.partitions.items() if p.tp == tp]:
            self._drop(key)

    def forget_group(self, group_id: str) -> None:
        """The group has no share session here (cluster mode): its share-partitions are read again."""
        for key in [k for k in self.partitions if k.group_id == group_id]:
            self._drop(key)

    def _drop(self, key: SharePartitionKey) -> None:
        self.partitions.pop(key, None)
        self._stored.pop(key, None)
        self.dead_letters_due.discard(key)

    async def delete(self, keys: Iterable[SharePartitionKey]) -> None:
        for key in list(keys):
            self._drop(key)
            await self._state_log.write(key, None)

    def group_metrics(self) -> dict[str, tuple[Counter[str], int]]:
        """Per share group: the outcomes of its deliveries here (since start-up) and its lag."""
        out: dict[str, tuple[Counter[str], int]] = {}
        for key, partition in self.partitions.items():
            outcomes, lag = out.get(key.group_id, (Counter(), 0))
            out[key.group_id] = (outcomes + partition.state.outcomes, lag + max(0, self.lag(key, partition.tp)))
        return out

    def lag(self, key: SharePartitionKey, tp: TopicPartition) -> int:
        """Records from the start offset up to the high watermark not yet acknowledged or archived."""
        stored = self.stored_state(key)
        plog = self._logs.find_log(tp)
        if stored is None or plog is None or stored.start_offset == UNINITIALIZED_START_OFFSET:
            return -1
        partition = self.partitions.get(key)
        done = partition.state.done_in_window() if partition is not None else delivery_complete_count(stored)
        return max(0, plog.high_watermark - stored.start_offset - done)

