"""FindCoordinator v0-6.

Behaviour: the coordinator of a group (key type GROUP = 0) or, once the transaction coordinator
runs, of a transactional id (TRANSACTION = 1) is the current leader of its shard, the
__consumer_offsets or __transaction_state partition the key hashes to, in the ClusterView (on a
single node: this node), answered with the address of the listener the client came in on when it
is this broker; COORDINATOR_NOT_AVAILABLE while no live broker leads the shard (docs/cluster.md).
Other key types are INVALID_REQUEST.
Version notes: v0 has no key type (GROUP); v1-3 answer one key with an error message; v4+ batch
coordinator_keys and answer one entry per key (Java asks for groups and transactions this way).
"""

from __future__ import annotations

import base64
import binascii
import uuid
from typing import TYPE_CHECKING

from coordinator.share.state_log import SHARE_GROUP_STATE_TOPIC, SharePartitionKey
from coordinator.transaction.log import TRANSACTION_STATE_TOPIC
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..authorizer.checks import authorized, denied
from ..handler import Handler, RequestContext
from .metadata import live_brokers

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from protocol.request_types.find_coordinator import FindCoordinatorRequest, FindCoordinatorRequestV4Plus


def _is_v4_plus(entity: FindCoordinatorRequest) -> TypeIs[FindCoordinatorRequestV4Plus]:
    # by the class's version, not isinstance: the union's classes load only for type checking
    return entity.__version__ >= 4

GROUP, TRANSACTION, SHARE = 0, 1, 2


def _share_shard(ctx: RequestContext, key: str) -> TopicPartition | KafkaError:
    """KIP-932's SHARE key "group:topic id:partition": its __share_group_state partition, asked for
    by share-partition leaders (CLUSTER_ACTION, as Kafka requires)."""
    if not authorized(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        return denied(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
    shards = ctx.broker.share_state_shards
    if shards is None:
        return KafkaError(ErrorCode.coordinator_not_available, "the share coordinator runs in cluster mode only")
    share_key = _share_key(key)
    if share_key is None:
        return KafkaError(ErrorCode.invalid_request, f"Invalid coordinator key {key}: expected group:topicId:partition")
    return TopicPartition(SHARE_GROUP_STATE_TOPIC, shards.log.partition_of(share_key))


def _share_key(key: str) -> SharePartitionKey | None:
    """The share-partition a SHARE key names; its topic id as Kafka writes it (URL-safe base64,
    Uuid.toString) or as a UUID string."""
    parts = key.rsplit(":", 2)
    if len(parts) != 3 or not parts[2].lstrip("-").isdigit():
        return None
    try:
        topic_id = uuid.UUID(parts[1])
    except ValueError:
        try:
            topic_id = uuid.UUID(bytes=base64.urlsafe_b64decode(parts[1] + "=="))
        except (ValueError, binascii.Error):
            return None
    return SharePartitionKey(parts[0], topic_id, int(parts[2]))


def _shard(ctx: RequestContext, key_type: int, key: str) -> TopicPartition | None:
    """The partition of the coordinator's log that `key` belongs to; None: that coordinator is not running."""
    if key_type == GROUP:
        group = ctx.broker.group_coordinator
        return None if group is None else group.partition_for(key)
    txn = ctx.broker.txn_coordinator
    return None if txn is None else TopicPartition(TRANSACTION_STATE_TOPIC, txn.partition_for(key))


def _lookup(ctx: RequestContext, key_type: int, key: str) -> dict[str, object]:
    missing = {"key": key, "node_id": -1, "host": "", "port": -1}
    if key_type == SHARE:
        shard = _share_shard(ctx, key)
        if isinstance(shard, KafkaError):
            return missing | {"error_code": shard.code, "error_message": shard.message}
        return _leader_entry(ctx, key, shard)
    if key_type not in (GROUP, TRANSACTION):
        return missing | {"error_code": ErrorCode.invalid_request,
                          "error_message": f"unknown coordinator key type {key_type}"}
    resource = ResourceType.GROUP if key_type == GROUP else ResourceType.TRANSACTIONAL_ID
    if not authorized(ctx, AclOperation.DESCRIBE, resource, key):
        refusal = denied(ctx, AclOperation.DESCRIBE, resource, key)
        return missing | {"error_code": refusal.code, "error_message": refusal.message}
    found = _shard(ctx, key_type, key)
    if found is None:
        return missing | {"error_code": ErrorCode.coordinator_not_available,
                          "error_message": "the coordinator is not running"}
    return _leader_entry(ctx, key, found)


def _leader_entry(ctx: RequestContext, key: str, shard: TopicPartition) -> dict[str, object]:
    missing = {"key": key, "node_id": -1, "host": "", "port": -1}
    leader = ctx.broker.cluster.leader(shard)
    node = -1 if leader is None else leader.leader
    for broker in live_brokers(ctx):
        if broker.node_id == node:
            return {"key": key, "node_id": node, "host": broker.host, "port": broker.port,
                    "error_code": ErrorCode.none, "error_message": None}
    return missing | {"error_code": ErrorCode.coordinator_not_available,
                      "error_message": f"no live broker leads {shard} yet"}


async def handle(ctx: RequestContext, request: FindCoordinatorRequest) -> object:
    key_type = int(getattr(request, "key_type", GROUP))
    shards = ctx.broker.share_state_shards
    if key_type == SHARE and shards is not None and authorized(ctx, AclOperation.CLUSTER_ACTION,
                                                               ResourceType.CLUSTER, CLUSTER_NAME):
        await shards.log.ensure_topic()  # as Kafka makes __share_group_state at the first lookup
    if _is_v4_plus(request):
        entries = [_lookup(ctx, key_type, key) for key in request.coordinator_keys]
        return ctx.respond({"throttle_time": 0, "coordinators": entries})
    entry = _lookup(ctx, key_type, request.key)
    del entry["key"]
    return ctx.respond({"throttle_time": 0, **entry})


HANDLER = Handler(api_key=ApiKey.FIND_COORDINATOR, min_version=0, max_version=6, handle=handle)
