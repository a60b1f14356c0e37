"""Reaching the transaction coordinator of an id from the broker that serves a Produce or a
TxnOffsetCommit (not a handler). On a single node, and in cluster mode when this broker leads the
id's __transaction_state shard, it is the local coordinator; otherwise the request goes to the
shard's leader as AddPartitionsToTxn v5, as Kafka's brokers send it (broker/inter_broker.py):
verify_only for Transactions V1, an add for V2."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from coordinator.transaction.coordinator import TransactionCoordinator
from coordinator.transaction.log import TRANSACTION_STATE_TOPIC
from coordinator.transaction.verification import AddPartitions
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..handler import RequestContext
from ..inter_broker import add_partitions_to_txn, verify_partitions_in_txn

__all__ = ("RemoteVerifier", "coordinator_add", "remote_verifier", "txn_coordinator")

# Asks the coordinator's broker whether partitions are in a transaction (Transactions V1).
RemoteVerifier = Callable[[str, int, int, list[TopicPartition]], Awaitable[dict[TopicPartition, ErrorCode]]]


def txn_coordinator(ctx: RequestContext) -> TransactionCoordinator:
    coordinator = ctx.broker.txn_coordinator
    if coordinator is None:
        raise KafkaError(ErrorCode.coordinator_not_available, "the transaction coordinator is not running")
    return coordinator


def _remote_leader(ctx: RequestContext, txn_id: str) -> int | None:
    """The node id of the broker leading txn_id's shard, if that is another broker."""
    coordinator = txn_coordinator(ctx)
    leader = ctx.broker.cluster.leader(TopicPartition(TRANSACTION_STATE_TOPIC, coordinator.partition_for(txn_id)))
    return None if leader is None or leader.leader == ctx.broker.node_id else int(leader.leader)


def coordinator_add(ctx: RequestContext) -> AddPartitions | None:
    """How to add partitions to a V2 transaction whose coordinator may be another broker (None
    on a single node: the local coordinator adds them)."""
    client, coordinator = ctx.broker.inter_broker, ctx.broker.txn_coordinator
    if client is None or coordinator is None:
        return None

    async def add(txn_id: str, pid: int, epoch: int, partitions: list[TopicPartition]) -> None:
        node = _remote_leader(ctx, txn_id)
        if node is None:
            await coordinator.add_partitions(txn_id, pid, epoch, partitions, tv2=True)
        else:
            await add_partitions_to_txn(client, node, txn_id, pid, epoch, partitions)
    return add


def remote_verifier(ctx: RequestContext, txn_id: str | None) -> RemoteVerifier | None:
    """Cluster mode, Transactions V1: how to verify with the transaction's coordinator when it is
    another broker (None when the local coordinator can tell, or there is nothing to verify)."""
    client, coordinator = ctx.broker.inter_broker, ctx.broker.txn_coordinator
    if client is None or coordinator is None or not txn_id:
        return None
    node = _remote_leader(ctx, txn_id)
    if node is None:
        return None

    async def verify(txn: str, pid: int, epoch: int,
                     partitions: list[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        return await verify_partitions_in_txn(client, node, txn, pid, epoch, partitions)
    return verify
