"""What every backend's partition log shares above its owner task (storage/log_actor.py): the
leader sequences its partition in memory -- an append is validated, checked against the producer
state (idempotence, transactions) and given its offsets here, then the backend stores it (segment
files, database rows) and applies it -- and the producer state answers the LSO, open-transaction
and active-producer questions the same way for every backend.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from protocol.control import read_end_txn_marker
from protocol.errors import ErrorCode, KafkaError

from .api import ActiveProducer, AppendOrigin, LogAppendInfo, OpenTransaction, TopicPartition
from .log_actor import LogActor
from .log_append import LEADER_EPOCH, PendingBatch, PreparedAppend, duplicate_info, prepare_append, validate_batches
from .log_config import LogConfig
from .log_messages import ActiveProducers, LogMessage, UpdateConfig
from .producer_state import ProducerStateEntry, ProducerStateManager

__all__ = ("SequencedAppend", "SequencedLog", "active_producer")


@dataclass(frozen=True, slots=True)
class SequencedAppend:
    """An append given its offsets, not yet stored: what the backend writes and then applies."""

    prepared: PreparedAppend  # the bytes to store (storage/log_append.py)
    batches: list[PendingBatch]  # each batch's header with its assigned offset, and its marker
    now_ms: int
    append_time: bool  # message.timestamp.type=LogAppendTime: batches carry now_ms


class SequencedLog(LogActor):
    """Base of a partition log: subclasses store batches, set producer_state and provide
    log_end_offset."""

    tp: TopicPartition
    config: LogConfig
    leader_epoch: int = LEADER_EPOCH  # a log that never changes leader writes epoch 0
    producer_state: ProducerStateManager  # idempotence and transactions, rebuilt by recovery

    def __init__(self, tp: TopicPartition, config: LogConfig) -> None:
        super().__init__(str(tp))
        self.tp = tp
        self.config = config
        self._log_start_offset = 0
        self.first_dirty_offset = 0  # where the cleaner's next pass starts (storage/cleaner/)

    @property
    def log_end_offset(self) -> int:
        raise NotImplementedError

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset  # the leader serves reads, and no follower lags: all is replicated

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @log_start_offset.setter
    def log_start_offset(self, offset: int) -> None:  # DeleteRecords and retention, in the owner task
        self._log_start_offset = offset

    @property
    def last_stable_offset(self) -> int:
        # Never below the log start: DeleteRecords may cut into an open transaction (Kafka's
        # updateFirstUnstableOffset takes the same max).
        return max(self.producer_state.last_stable_offset(self.high_watermark), self._log_start_offset)

    def check_offset(self, fetch_offset: int) -> None:
        if fetch_offset < self._log_start_offset or fetch_offset > self.log_end_offset:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"offset {fetch_offset} is outside [{self._log_start_offset}, {self.log_end_offset}] of {self.tp}",
            )

    # -- producers (read on the event loop, or inside the owner task) -----------------------------

    async def active_producers(self) -> list[ActiveProducer]:
        return await self.ask(ActiveProducers())

    def open_transactions(self) -> list[OpenTransaction]:
        state = self.producer_state
        return state.open_transactions() if state.has_open_transactions else []

    def has_open_transaction(self, producer_id: int, producer_epoch: int | None = None) -> bool:
        entry = self.producer_state.producers.get(producer_id)
        return (entry is not None and entry.current_txn_first_offset is not None
                and (producer_epoch is None or entry.producer_epoch == producer_epoch))

    async def update_config(self, config: LogConfig) -> None:
        """Adopt new topic configs between two commands, never in the middle of one."""
        await self.ask(UpdateConfig(config))

    async def _handle(self, message: LogMessage[object]) -> object:
        match message:
            case ActiveProducers():
                return [active_producer(e) for e in self.producer_state.producers.values()]
            case UpdateConfig(config):
                self.config = config
                return None
            case _:
                return await super()._handle(message)

    # -- sequencing an append (in the owner task) ---------------------------------------------------

    def _sequence(self, records: bytes | memoryview, origin: AppendOrigin,
                  base: int) -> SequencedAppend | LogAppendInfo:
        """Validate the batches and give them offsets from base; a retry of a written batch
        answers as before (LogAppendInfo) and is not stored again."""
        headers = validate_batches(records, origin, self.config, self.tp)
        view = memoryview(records)
        batches = [PendingBatch(h, read_end_txn_marker(view, pos, h) if h.is_control else None) for pos, h in headers]
        state = self.producer_state
        for b in batches:
            duplicate = state.check_append(b.header, origin, b.marker)
            if duplicate is not None:
                return duplicate_info(duplicate, self.config, self._log_start_offset)
        now_ms = int(time.time() * 1000)
        append_time = self.config.message_timestamp_type == "LogAppendTime"
        prepared = prepare_append(view, headers, base, now_ms if append_time else None, self.leader_epoch)
        assigned = [PendingBatch(h, b.marker) for (_, h), b in zip(prepared.assigned, batches, strict=True)]
        return SequencedAppend(prepared, assigned, now_ms, append_time)

    def _append_info(self, base: int, appended: SequencedAppend) -> LogAppendInfo:
        return LogAppendInfo(base_offset=base, last_offset=appended.prepared.next_offset - 1,
                             log_append_time=appended.now_ms if appended.append_time else -1,
                             log_start_offset=self._log_start_offset)


def active_producer(e: ProducerStateEntry) -> ActiveProducer:
    return ActiveProducer(
        producer_id=e.producer_id, producer_epoch=e.producer_epoch, last_sequence=e.last_seq,
        last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
        current_txn_start_offset=-1 if e.current_txn_first_offset is None else e.current_txn_first_offset,
    )
