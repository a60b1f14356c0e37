"""The coordinator's durable side: __transaction_state and producer-id blocks.

append() writes one transaction record to the partition of its id; load_partition() replays one
partition (a coordinator shard) into its TxnShard (the last record of an id wins, a
tombstone removes it). Records are written as ordinary batches through the partition log actor.

Producer ids come in blocks from a ProducerIdBlockSource (storage/api.py): a file in the data dir
on a single node, the cluster's counter in cluster mode. Versions before kept a single node's
blocks as records of their own in partition 0, which Kafka's tools cannot decode (kafka-dump-log
--transaction-log-decoder stopped there); such records in an existing data dir are still read at
load, and the source is told to hand out nothing below them (honour).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

from protocol.errors import ErrorCode, KafkaError
from protocol.records import Record, build_batch, read_records
from storage.api import AppendOrigin, LogAppendInfo, LogSource, PartitionLog, ProducerIdBlockSource, TopicPartition

from .log import (
    TRANSACTION_STATE_TOPIC,
    TxnLogEntry,
    decode_record,
    partition_for,
    transaction_key,
    transaction_value,
)
from .metadata import TxnTransition
from .producer_id_manager import ProducerIdBlock, ProducerIdManager

__all__ = ("TransactionStateStore",)

log = logging.getLogger(__name__)
_READ_CHUNK = 1 << 20


class TransactionStateStore:
    def __init__(self, logs: LogSource, num_partitions: int, block_size: int,
                 blocks: ProducerIdBlockSource, segment_bytes: int = 104_857_600) -> None:
        self.logs = logs
        self.num_partitions = num_partitions
        self.segment_bytes = segment_bytes  # transaction.state.log.segment.bytes
        self.producer_ids = ProducerIdManager(block_size)
        self.blocks = blocks

    def _log(self, partition: int) -> PartitionLog:
        return self.logs.get_log(TopicPartition(TRANSACTION_STATE_TOPIC, partition))

    async def ensure_topic(self) -> None:
        # Kafka's transactionTopicConfigs (but min.insync.replicas: one replica here, or PostgreSQL's).
        configs = {"cleanup.policy": "compact", "compression.type": "uncompressed",
                   "unclean.leader.election.enable": "false", "segment.bytes": str(self.segment_bytes)}
        meta = self.logs.topics.get(TRANSACTION_STATE_TOPIC)
        if meta is None:
            try:
                await self.logs.create_topic(TRANSACTION_STATE_TOPIC, self.num_partitions, configs)
            except KafkaError as exc:  # cluster mode: another broker created it first
                if exc.code is not ErrorCode.topic_already_exists:
                    raise
            meta = self.logs.topics.get(TRANSACTION_STATE_TOPIC)
        elif "segment.bytes" not in meta.configs:
            # Made before segments were sized for compaction: adopt the setting once (an
            # operator's own segment.bytes is kept), as Kafka sets it at creation.
            await self.logs.alter_configs(TRANSACTION_STATE_TOPIC, {**configs, **meta.configs})
        if meta is not None and meta.partitions != self.num_partitions:
            # Kafka keeps the existing count too: ids must keep mapping to their old partition.
            log.warning("%s has %d partitions, not transaction.state.log.num.partitions=%d; "
                        "keeping %d", TRANSACTION_STATE_TOPIC, meta.partitions,
                        self.num_partitions, meta.partitions)
            self.num_partitions = meta.partitions

    async def _write(self, partition: int, key: bytes, value: bytes | None) -> None:
        appended = self._submit(partition, key, value)
        if not isinstance(appended, LogAppendInfo):
            await appended

    def _submit(self, partition: int, key: bytes, value: bytes | None) -> LogAppendInfo | asyncio.Future[LogAppendInfo]:
        batch = build_batch([Record(key=key, value=value, timestamp=int(time.time() * 1000))])
        return self._log(partition).submit(bytes(batch), AppendOrigin.COORDINATOR)

    async def append(self, transactional_id: str, t: TxnTransition, transaction_version: int = 0) -> None:
        """Write t and wait until it is durable (submit's record alone)."""
        written = self.submit([TxnLogEntry(transactional_id=transactional_id, transition=t)], transaction_version)
        if written is not None:
            await written

    def submit(self, records: Sequence[TxnLogEntry], transaction_version: int) -> asyncio.Future[None] | None:
        """Hand the records to their partitions' logs now, in this order (a later record of the
        same partition goes after them): None when they are durable already, else a future for
        that. transaction_version is the finalized level: Kafka writes value version 1 once it is
        >= 1; so do we, and whenever a transition holds V2 fields that version 0 cannot carry (a
        V2 client while the level is lower). A failure is the KafkaError the coordinator answers."""
        waits: list[tuple[str, asyncio.Future[LogAppendInfo]]] = []
        for record in records:
            t = record.transition
            assert t is not None, "a live write always carries a transition"
            v2_fields = t.client_transaction_version or t.next_producer_id != -1 or t.last_producer_id != -1
            version = 1 if transaction_version >= 1 or v2_fields else 0
            partition = partition_for(record.transactional_id, self.num_partitions)
            try:
                appended = self._submit(partition, transaction_key(record.transactional_id),
                                        transaction_value(t, version))
            except Exception as exc:
                raise _not_persisted(record.transactional_id, exc) from exc
            if not isinstance(appended, LogAppendInfo):
                waits.append((record.transactional_id, appended))
        return asyncio.ensure_future(_durable(waits)) if waits else None

    async def generate_producer_id(self) -> int:
        pid = self.producer_ids.try_generate()
        if pid is None:
            size = self.producer_ids.block_size
            block = ProducerIdBlock(first_producer_id=await self.blocks.allocate_producer_ids(size), size=size)
            self.producer_ids.apply_block(block)
            log.info("allocated producer ids %d-%d", block.first_producer_id,
                     block.last_producer_id)
            pid = self.producer_ids.try_generate()
            assert pid is not None
        return pid

    # -- loading -------------------------------------------------------------------------------

    async def load_partition(self, partition: int, replay: Callable[[TxnLogEntry], None]) -> int:
        """Replay one shard's records, in order, into replay (and honour any producer-id block
        records of earlier versions); how many records it read."""
        legacy_next = 0
        plog = self._log(partition)
        offset, records = plog.log_start_offset, 0
        while offset < plog.log_end_offset:
            info = await plog.read(offset, _READ_CHUNK)
            data = b"".join(info.records)
            if not data:
                break
            for header, recs in read_records(data):
                for rec in recs:
                    if rec.offset >= offset:
                        entry = decode_record(rec.key, rec.value)
                        if isinstance(entry, ProducerIdBlock):  # an earlier version's block record
                            legacy_next = max(legacy_next, entry.last_producer_id + 1)
                        else:
                            replay(entry)
                        records += 1
                offset = header.last_offset + 1
        if legacy_next:
            await self.blocks.honour(legacy_next)
        return records


async def _durable(waits: list[tuple[str, asyncio.Future[LogAppendInfo]]]) -> None:
    for transactional_id, appended in waits:
        try:
            await appended
        except Exception as exc:
            raise _not_persisted(transactional_id, exc) from exc


def _not_persisted(transactional_id: str, exc: Exception) -> KafkaError:
    # A shard whose log this broker no longer leads: the client must find the new coordinator.
    moved = isinstance(exc, KafkaError) and exc.code is ErrorCode.not_leader_or_follower
    return KafkaError(ErrorCode.not_coordinator if moved else ErrorCode.coordinator_not_available,
                      f"could not persist the transaction state of '{transactional_id}': {exc}")
