"""Transactional produce verification (KIP-890 part 1, Kafka >= 3.6, for TV1 clients).

The first transactional batch of a producer on a partition opens a transaction there, which holds
the partition's LSO back until a marker closes it. If that partition was never added to the
transaction (a client bug, or a late retry arriving after EndTxn), no marker will ever come and
every read_committed consumer hangs. So before such a batch is written the coordinator must know
the partition as part of the producer's ONGOING transaction; otherwise INVALID_TXN_STATE, as Kafka
answers ("Partition was not added to the transaction"). Batches from an older epoch are left to
the log's own epoch check (INVALID_PRODUCER_EPOCH).
"""

from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode, KafkaError
from protocol.record_batch import RecordBatchHeader, iter_batches
from storage.api import PartitionLog, TopicPartition

from .state import TxnState

__all__ = ("verify_transactional_batches", "verify_transactional_produce")


def verify_transactional_produce(
    coordinator: Any, transactional_id: str | None, tp: TopicPartition, header: RecordBatchHeader,
    open_txn_in_partition: bool,
) -> None:
    if not header.is_transactional or open_txn_in_partition:
        return
    if not transactional_id:
        raise KafkaError(ErrorCode.invalid_request,
                         f"transactional batch to {tp} from producer {header.producer_id} without a transactional id")
    md = coordinator.describe(transactional_id)
    if md is None or md.producer_id != header.producer_id or md.producer_epoch != header.producer_epoch:
        return  # the log answers stale epochs; unknown ids are fenced there too
    if md.state is not TxnState.ONGOING or tp not in md.topic_partitions:
        raise KafkaError(
            ErrorCode.invalid_txn_state,
            f"partition {tp} was not added to the transaction of '{transactional_id}' (producer "
            f"{md.producer_id} epoch {md.producer_epoch}, transaction {md.state.display_name}); "
            "call AddPartitionsToTxn before producing",
        )


def verify_transactional_batches(
    coordinator: Any, transactional_id: str | None, tp: TopicPartition, plog: PartitionLog, records: bytes,
) -> None:
    """Check a produce request's batches for one partition before they go to its log actor."""
    if coordinator is None:
        return
    for _, header in iter_batches(records, verify_crc=False):
        is_open = plog.has_open_transaction(header.producer_id)
        verify_transactional_produce(coordinator, transactional_id, tp, header, is_open)
