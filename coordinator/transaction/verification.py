"""Transactional produce verification (KIP-890 part 1, Kafka >= 3.6, for TV1 clients), and the
implicit partition add of Transactions V2 (KIP-890 part 2: Produce v12+).

The first transactional batch of a producer on a partition opens a transaction there, which holds
the partition's LSO back until a marker closes it. If that partition was never added to the
transaction (a client bug, or a late retry arriving after EndTxn), no marker will ever come and
every read_committed consumer hangs. So before such a batch is written the coordinator must know
the partition as part of the producer's ONGOING transaction; otherwise INVALID_TXN_STATE, as Kafka
answers ("Partition was not added to the transaction"): Produce v11 knows TRANSACTION_ABORTABLE
for it, which tells the client to abort rather than fail for good. Batches from an older epoch
are left to the log's own epoch check (INVALID_PRODUCER_EPOCH).

Under V2 the client sends no AddPartitionsToTxn: the first transactional batch of a transaction
to a partition adds it, through the coordinator (Kafka's broker sends AddPartitionsToTxn v5 to
the coordinator), before the batch is written. The coordinator's errors reach the producer as
Kafka's ReplicaManager passes them on: PRODUCER_FENCED as INVALID_PRODUCER_EPOCH, and
CONCURRENT_TRANSACTIONS as is (the previous transaction's markers are still being written), once
the broker has retried the add for add.partitions.to.txn.retry.backoff.max.ms.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode, KafkaError
from protocol.record_batch import RecordBatchHeader
from storage.api import PartitionLog, TopicPartition

from .state import TxnState

if TYPE_CHECKING:
    from .coordinator import TransactionCoordinator
    from .metadata import TransactionMetadata

__all__ = ("AddRetry", "add_partitions_for_produce", "check_first_sequence_v2", "verify_in_transaction",
           "verify_partitions", "add_offsets_for_txn_offset_commit", "verify_remotely", "verify_transactional_batches",
           "verify_transactional_produce", "verify_txn_offset_commit")


def verify_transactional_produce(
    coordinator: TransactionCoordinator, transactional_id: str | None, tp: TopicPartition, header: RecordBatchHeader,
    open_txn_in_partition: bool, produce_version: int = 11,
) -> None:
    if not header.is_transactional or open_txn_in_partition:
        return
    if not transactional_id:
        raise KafkaError(ErrorCode.invalid_request,
                         f"transactional batch to {tp} from producer {header.producer_id} without a transactional id")
    md = coordinator.describe(transactional_id)
    if md is None:
        return  # another broker's coordinator (cluster mode); unknown ids are fenced by the log
    verify_in_transaction(md, header.producer_id, header.producer_epoch, tp, produce_version >= 11,
                          "AddPartitionsToTxn before producing")


def verify_txn_offset_commit(coordinator: TransactionCoordinator | None, transactional_id: str, producer_id: int,
                             producer_epoch: int, group_id: str, version: int) -> None:
    """TxnOffsetCommit v0-4 (Transactions V1): the group's __consumer_offsets partition must be in
    the transaction (AddOffsetsToTxn) before offsets are written there as the producer's data,
    as Kafka's group coordinator verifies; v4 knows TRANSACTION_ABORTABLE for it."""
    md = None if coordinator is None else coordinator.describe(transactional_id)
    if coordinator is None or md is None:
        return  # another broker's coordinator (cluster mode); unknown ids are fenced by the log
    try:
        verify_in_transaction(md, producer_id, producer_epoch, coordinator.offsets_partition(group_id),
                              version >= 4, "AddOffsetsToTxn before TxnOffsetCommit")
    except KafkaError as exc:
        if exc.code is not ErrorCode.not_enough_replicas:
            raise
        # Kafka's group coordinator answers a retriable write failure this way (its
        # normalizeException), which every client retries
        raise KafkaError(ErrorCode.coordinator_not_available, exc.message) from None


# Kafka's group coordinator answers a retriable failure to reach the transaction coordinator
# (NOT_ENOUGH_REPLICAS from its AddPartitionsToTxnManager) as COORDINATOR_NOT_AVAILABLE.
_UNREACHED = frozenset({
    ErrorCode.network_exception, ErrorCode.coordinator_load_in_progress, ErrorCode.coordinator_not_available,
    ErrorCode.not_coordinator, ErrorCode.request_timed_out, ErrorCode.not_enough_replicas})


async def add_offsets_for_txn_offset_commit(
    coordinator: TransactionCoordinator | None, add: AddPartitions | None, verify: VerifyPartitions | None,
    transactional_id: str,
    producer_id: int, producer_epoch: int, group_id: str, version: int,
) -> None:
    """TxnOffsetCommit: v5 adds the group's __consumer_offsets partition to the transaction, v0-4
    verify it is there, through the id's coordinator wherever it is (add / verify reach another
    broker's), with the errors Kafka's group coordinator answers."""
    if coordinator is None:  # the broker's services are not (or no longer) running
        raise KafkaError(ErrorCode.coordinator_not_available, "the transaction coordinator is not running")
    tp = coordinator.offsets_partition(group_id)
    try:
        if version >= 5 and add is not None:
            await add(transactional_id, producer_id, producer_epoch, [tp])
        elif version >= 5:
            await coordinator.add_partitions(transactional_id, producer_id, producer_epoch, [tp], tv2=True)
        elif verify is not None:
            code = (await verify(transactional_id, producer_id, producer_epoch, [tp])).get(tp, ErrorCode.none)
            if code is ErrorCode.transaction_abortable and version < 4:
                code = ErrorCode.invalid_txn_state
            if code is not ErrorCode.none:
                raise KafkaError(code, f"Partition was not added to the transaction: the group '{group_id}' is not "
                                 f"in the transaction of '{transactional_id}' ({code.name} from its coordinator)")
        else:
            verify_txn_offset_commit(coordinator, transactional_id, producer_id, producer_epoch, group_id, version)
    except KafkaError as exc:
        if exc.code in _UNREACHED:
            raise KafkaError(ErrorCode.coordinator_not_available, exc.message) from None
        raise


def verify_in_transaction(md: TransactionMetadata, producer_id: int, producer_epoch: int, tp: TopicPartition,
                          knows_abortable: bool, call_first: str) -> None:
    """Kafka's handleVerifyPartitionsInTransaction with the errors its brokers pass on to a
    Produce (v3-11) or TxnOffsetCommit (v0-4) whose data would open a transaction in tp:
    a partition the transaction does not hold is TRANSACTION_ABORTABLE for the versions that know
    it, INVALID_TXN_STATE before; a fenced epoch INVALID_PRODUCER_EPOCH, and markers still being
    written NOT_ENOUGH_REPLICAS (retriable without a metadata refresh). Checking the epoch here
    matters: a partition that never saw the producer cannot check it itself, and a stale batch
    written there would open a transaction no marker ever closes."""
    txn = md.transactional_id
    if md.producer_id != producer_id:
        raise KafkaError(ErrorCode.invalid_producer_id_mapping,
                         f"producer id {producer_id} does not belong to transactional id '{txn}'")
    if md.producer_epoch != producer_epoch:
        raise KafkaError(ErrorCode.invalid_producer_epoch, f"producer epoch {producer_epoch} of '{txn}' is fenced "
                         f"(now {md.producer_epoch}); the partition {tp} was not added to its transaction")
    # (a pending ONGOING is another AddPartitionsToTxn being persisted: the transaction goes on)
    if md.state.is_preparing or md.pending_state not in (None, TxnState.ONGOING):
        raise KafkaError(ErrorCode.not_enough_replicas, "Unable to verify the partition has been added to the "
                         f"transaction. Underlying error: CONCURRENT_TRANSACTIONS ('{txn}' is ending)")
    if md.state is not TxnState.ONGOING or tp not in md.topic_partitions:
        raise KafkaError(
            ErrorCode.transaction_abortable if knows_abortable else ErrorCode.invalid_txn_state,
            f"Partition was not added to the transaction: {tp} is not in the transaction of '{txn}' "
            f"(producer {md.producer_id} epoch {md.producer_epoch}, transaction {md.state.display_name}); "
            f"call {call_first}",
        )


def verify_transactional_batches(
    coordinator: TransactionCoordinator | None, transactional_id: str | None, tp: TopicPartition, plog: PartitionLog,
    header: RecordBatchHeader, produce_version: int = 11,
) -> None:
    """Check a produce request's batch for one partition (Produce v3+ carries one; its header is
    parsed once by the handler) before it goes to the partition's log actor."""
    if coordinator is None:
        return
    is_open = plog.has_open_transaction(header.producer_id)
    verify_transactional_produce(coordinator, transactional_id, tp, header, is_open, produce_version)


async def check_first_sequence_v2(plog: PartitionLog, tp: TopicPartition, header: RecordBatchHeader) -> None:
    """Kafka's rule for Transactions V2 writes (ProducerAppendInfo): a producer the partition holds
    no state for must begin at sequence 0, so a batch whose predecessors were lost is refused
    instead of opening a transaction with a gap. Checked only when the batch starts elsewhere."""
    if not header.is_transactional or header.base_sequence == 0 or plog.has_open_transaction(header.producer_id):
        return
    if any(p.producer_id == header.producer_id for p in await plog.active_producers()):
        return
    raise KafkaError(ErrorCode.out_of_order_sequence_number,
                     f"Invalid sequence number for producer {header.producer_id} in partition {tp}: "
                     f"{header.base_sequence} (incoming seq. number). Expected sequence 0 for transactions v2 "
                     "idempotent producer with no existing state.")


def _already_added(
    coordinator: TransactionCoordinator, transactional_id: str, tp: TopicPartition, header: RecordBatchHeader,
) -> bool:
    md = coordinator.describe(transactional_id)
    return (md is not None and md.state is TxnState.ONGOING and md.pending_state is None
            and md.producer_id == header.producer_id and md.producer_epoch == header.producer_epoch
            and tp in md.topic_partitions)


def verify_partitions(
    md: TransactionMetadata | None, transactional_id: str, producer_id: int, producer_epoch: int,
    partitions: Iterable[TopicPartition],
) -> dict[TopicPartition, ErrorCode]:
    """AddPartitionsToTxn v4+ with verify_only (Kafka's handleVerifyPartitionsInTransaction): the
    partitions already in the producer's transaction, the rest TRANSACTION_ABORTABLE."""
    if md is None:
        raise KafkaError(ErrorCode.invalid_producer_id_mapping, f"transactional id '{transactional_id}' is unknown")
    if md.producer_id != producer_id:
        raise KafkaError(ErrorCode.invalid_producer_id_mapping, f"producer id {producer_id} does not belong to "
                         f"'{transactional_id}'")
    if md.producer_epoch != producer_epoch:
        raise KafkaError(ErrorCode.producer_fenced, f"producer epoch {producer_epoch} of '{transactional_id}' is "
                         f"fenced (now {md.producer_epoch})")
    if md.state.is_preparing:
        raise KafkaError(ErrorCode.concurrent_transactions, f"the transaction of '{transactional_id}' is ending")
    return {tp: ErrorCode.none if tp in md.topic_partitions else ErrorCode.transaction_abortable
            for tp in partitions}


VerifyPartitions = Callable[[str, int, int, list[TopicPartition]], Awaitable[Mapping[TopicPartition, ErrorCode]]]


async def verify_remotely(verify: VerifyPartitions, transactional_id: str | None, tp: TopicPartition,
                          plog: PartitionLog, header: RecordBatchHeader, produce_version: int) -> None:
    """verify_transactional_batches for a transaction another broker coordinates (cluster mode):
    AddPartitionsToTxn v5 with verify_only to it, as Kafka's partition leaders send it, with the
    errors its ReplicaManager passes on to Produce."""
    if not header.is_transactional or plog.has_open_transaction(header.producer_id) or not transactional_id:
        return
    try:
        code = (await verify(transactional_id, header.producer_id, header.producer_epoch, [tp])).get(
            tp, ErrorCode.none)
    except KafkaError as exc:
        code = exc.code
    if code is ErrorCode.transaction_abortable or code is ErrorCode.cluster_authorization_failed:
        code = ErrorCode.transaction_abortable if produce_version >= 11 else ErrorCode.invalid_txn_state
    if code is not ErrorCode.none:
        raise _produce_error(KafkaError(code, f"Partition was not added to the transaction: {tp} is not in "
                                        f"the transaction of '{transactional_id}' ({code.name} from its "
                                        "coordinator)"), epoch_bump=False)


# Retriable failures to reach the coordinator, which Kafka's ReplicaManager answers as
# NOT_ENOUGH_REPLICAS: every producer retries that without refreshing its metadata.
_UNVERIFIED = frozenset({ErrorCode.network_exception, ErrorCode.coordinator_load_in_progress,
                         ErrorCode.coordinator_not_available, ErrorCode.not_coordinator, ErrorCode.request_timed_out})
AddPartitions = Callable[[str, int, int, list[TopicPartition]], Awaitable[None]]


def _produce_error(exc: KafkaError, epoch_bump: bool = True) -> KafkaError:
    """epoch_bump: Produce v12+, which retries CONCURRENT_TRANSACTIONS itself; older versions get
    NOT_ENOUGH_REPLICAS for it, as for the other retriable failures."""
    if exc.code is ErrorCode.producer_fenced:  # "Producers expect to handle INVALID_PRODUCER_EPOCH"
        return KafkaError(ErrorCode.invalid_producer_epoch, exc.message)
    if exc.code in _UNVERIFIED or (exc.code is ErrorCode.concurrent_transactions and not epoch_bump):
        return KafkaError(ErrorCode.not_enough_replicas, "Unable to add the partition to the transaction. "
                          f"Underlying error: {exc.code.name}: {exc.message}")
    return exc


# How to wait, up to the given seconds, for the markers of an id's last transaction.
MarkersWritten = Callable[[str, float], Awaitable[None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class AddRetry:
    """Kafka's add.partitions.to.txn.retry.backoff.ms / .max.ms (the max capped by
    request.timeout.ms): a V2 add that finds the last transaction's markers still being written is
    retried on the broker for a while, as the next transaction's first batch usually comes right
    after EndTxn answered, rather than sent back to the client at once. With `wait` (the local
    coordinator's markers_written) a retry goes as soon as the markers are written, at most
    backoff_ms later: they usually take a millisecond or two, far less than the backoff."""

    backoff_ms: int = 20
    max_ms: int = 0
    wait: MarkersWritten | None = None


async def _add_retrying(add: AddPartitions, retry: AddRetry, transactional_id: str, producer_id: int, epoch: int,
                        partitions: list[TopicPartition]) -> None:
    loop = asyncio.get_running_loop()
    pause = retry.backoff_ms / 1000
    deadline = loop.time() + retry.max_ms / 1000
    while True:
        try:
            return await add(transactional_id, producer_id, epoch, partitions)
        except KafkaError as exc:
            if exc.code is not ErrorCode.concurrent_transactions or loop.time() + pause > deadline:
                raise
        await (asyncio.sleep(pause) if retry.wait is None else retry.wait(transactional_id, pause))


async def add_partitions_for_produce(
    coordinator: TransactionCoordinator | None, transactional_id: str | None,
    batches: Iterable[tuple[TopicPartition, RecordBatchHeader]],
    add: AddPartitions | None = None, retry: AddRetry | None = None,
    open_in_log: Callable[[TopicPartition, RecordBatchHeader], bool] | None = None,
) -> dict[TopicPartition, KafkaError]:
    """Produce v12+: add the partitions whose transactional batches open a transaction there; the
    errors of those that could not be added (the others go on to their logs). add reaches the
    coordinator of the id (another broker's in cluster mode); by default the local one.
    open_in_log tells the partitions whose log already holds the transaction: they need no add."""
    wanted = {tp: h for tp, h in batches if h.is_transactional}
    if coordinator is None or not wanted:
        return {}
    if not transactional_id:
        error = KafkaError(ErrorCode.invalid_request, "transactional batches without a transactional id")
        return dict.fromkeys(wanted, error)
    producers = {(h.producer_id, h.producer_epoch) for h in wanted.values()}
    if len(producers) > 1:  # as Kafka: the whole request is refused
        error = KafkaError(ErrorCode.invalid_producer_id_mapping, "Transactional records contained more than "
                           "one producer ID")
        return dict.fromkeys(wanted, error)
    todo = [tp for tp, h in wanted.items() if not (open_in_log is not None and open_in_log(tp, h))
            and not _already_added(coordinator, transactional_id, tp, h)]
    if not todo:
        return {}
    producer_id, epoch = producers.pop()
    async def local(txn_id: str, pid: int, producer_epoch: int, partitions: list[TopicPartition]) -> None:
        await coordinator.add_partitions(txn_id, pid, producer_epoch, partitions, tv2=True)

    try:
        await _add_retrying(add or local, retry or AddRetry(), transactional_id, producer_id, epoch, todo)
    except KafkaError as exc:
        return dict.fromkeys(todo, _produce_error(exc))
    return {}
