"""TxnOffsetCommit v0-6.

Behaviour: the group coordinator writes the offsets to the group's __consumer_offsets partition
as a transactional batch of the producer and holds them pending; the COMMIT marker that EndTxn
writes there makes them the group's committed offsets, an ABORT drops them. Until then
OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for those partitions. Partitions
that do not exist get UNKNOWN_TOPIC_OR_PARTITION, as in OffsetCommit (one shared validation).
Under v5 (Transactions V2) the client sends no AddOffsetsToTxn: the group's __consumer_offsets
partition is added to the transaction here, through the transaction coordinator (another broker's
in cluster mode, with AddPartitionsToTxn v5), before the offsets are written (PRODUCER_FENCED reaches
the client as INVALID_PRODUCER_EPOCH, as for every version; a coordinator that cannot be reached
as COORDINATOR_NOT_AVAILABLE, as Kafka's group coordinator answers it).
Under v0-4 (Transactions V1) the group must have been added with AddOffsetsToTxn first, as Kafka
verifies (KIP-890 part 1): otherwise the offsets would open a transaction in __consumer_offsets that
no marker closes; v4 answers TRANSACTION_ABORTABLE for it (the client aborts and goes on), v0-3
INVALID_TXN_STATE.
Version notes: v3+ carries generation, member id and group instance id (KIP-447), checked as
OffsetCommit checks them, except that a group this broker does not know is ILLEGAL_GENERATION for
a generation >= 0 (a lower one creates it, as OffsetCommit does) and a stale member epoch is
ILLEGAL_GENERATION too, as Kafka answers TxnOffsetCommit; v6 (KIP-1319, protocol/newer_schemas.py)
names topics by id, answers UNKNOWN_TOPIC_ID for an id it does not know, and says
GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH for those two.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.transaction.metadata import ProducerIdAndEpoch
from coordinator.transaction.verification import add_offsets_for_txn_offset_commit
from protocol.api_keys import ApiKey
from protocol.build import field_or
from protocol.errors import KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import require
from ..handler import Handler, RequestContext
from .group_common import commit_results, group_coordinator, request_topics, requested_offsets
from .txn_errors import txn_error_code
from .txn_routing import coordinator_add, remote_verifier

if TYPE_CHECKING:
    from protocol.request_types.txn_offset_commit import TxnOffsetCommitRequest

TOPIC_IDS_VERSION = 6


async def handle(ctx: RequestContext, request: TxnOffsetCommitRequest) -> object:
    require(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id)
    require(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id)
    topics = request_topics(ctx, request.topics, by_id=ctx.version >= TOPIC_IDS_VERSION)
    wanted, results = requested_offsets(ctx, topics)
    if wanted:
        try:
            await add_offsets_for_txn_offset_commit(
                ctx.broker.txn_coordinator, coordinator_add(ctx), remote_verifier(ctx, request.transactional_id),
                request.transactional_id, request.producer_id, request.producer_epoch, request.group_id, ctx.version)
            results |= await group_coordinator(ctx).commit_offsets(
                request.group_id,
                wanted,
                member_id=field_or(request, "member_id", ""),
                generation_id=field_or(request, "generation_id", -1),
                group_instance_id=field_or(request, "group_instance_id", None),
                producer=ProducerIdAndEpoch(producer_id=request.producer_id, epoch=request.producer_epoch),
                api_version=ctx.version,
            )
        except KafkaError as exc:
            code = txn_error_code(exc, ctx.version, 99, "TxnOffsetCommit", request.transactional_id)
            results |= dict.fromkeys(wanted, code)
    return ctx.respond({"throttle_time": 0, "topics": commit_results(topics, results)})


HANDLER = Handler(api_key=ApiKey.TXN_OFFSET_COMMIT, min_version=0, max_version=6, handle=handle)
