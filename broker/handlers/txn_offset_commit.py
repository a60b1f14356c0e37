"""TxnOffsetCommit v0-4.

Behaviour: the group coordinator writes the offsets to the group's __consumer_offsets partition
as a transactional batch of the producer and holds them pending; the COMMIT marker that EndTxn
writes there makes them the group's committed offsets, an ABORT drops them. Until then
OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for those partitions.
Version notes: v3+ carries generation, member id and group instance id (KIP-447), checked as
OffsetCommit checks them; v5 (Transactions V2) is not advertised.
"""

from __future__ import annotations

from typing import Any

from coordinator.group.offsets import OffsetAndMetadata
from protocol.api_keys import ApiKey
from protocol.build import field_or
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..handler import Handler, RequestContext
from .txn_errors import txn_error_code


def _offsets(request: Any) -> dict[TopicPartition, OffsetAndMetadata]:
    return {
        TopicPartition(t.name, p.partition_index): OffsetAndMetadata(
            committed_offset=p.committed_offset,
            committed_leader_epoch=field_or(p, "committed_leader_epoch", -1),
            metadata=p.committed_metadata or "",
        )
        for t in request.topics
        for p in t.partitions
    }


async def handle(ctx: RequestContext, request: Any) -> Any:
    offsets = _offsets(request)
    group = ctx.broker.group_coordinator
    try:
        if group is None:
            raise KafkaError(ErrorCode.coordinator_not_available, "the group coordinator is not running")
        errors = await group.add_pending_txn_offsets(
            request.group_id, request.producer_id, request.producer_epoch,
            field_or(request, "generation_id", -1), field_or(request, "member_id", ""),
            field_or(request, "group_instance_id", None), offsets)
    except KafkaError as exc:
        code = txn_error_code(exc, ctx.version, 99, "TxnOffsetCommit", request.transactional_id)
        errors = dict.fromkeys(offsets, code)
    return ctx.respond({"throttle_time": 0, "topics": [
        {"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": errors[TopicPartition(t.name, p.partition_index)]}
            for p in t.partitions]}
        for t in request.topics
    ]})


HANDLER = Handler(api_key=ApiKey.TXN_OFFSET_COMMIT, min_version=0, max_version=4, handle=handle)
