"""DescribeQuorum v0-2.

Behaviour: the metadata quorum as Kafka 4.4's KafkaRaftClient describes it, for the one partition
__cluster_metadata-0; a request naming anything else, or more than that one partition, gets
UNKNOWN_TOPIC_OR_PARTITION on each partition it names, as Kafka answers. eosbroker has no Raft log:
the broker that answers is the controller (Metadata and DescribeCluster name it so: any broker
changes topics), so it is the quorum's one voter and its leader, at leader epoch 0 (there are no
elections). Its metadata is files in the data dir, or in cluster mode the cluster's database, not
a log with offsets, so the high watermark and every log end offset are -1, which Kafka's schema
uses for unknown. The leader's fetch and caught-up times are now, as Kafka gives its leader. In
cluster mode the other live brokers are observers, as a KRaft cluster's brokers are, with unknown
(-1) fetch times: they read the database themselves, not from this broker. Needs DESCRIBE on the
CLUSTER (top-level CLUSTER_AUTHORIZATION_FAILED, as ControllerApis answers).
Version notes: v1 adds the fetch and caught-up times; v2 adds error messages, each replica's
directory id (meta.properties' directory.id) and the voters' endpoints: this broker's advertised
listeners, where it answers as the controller.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Final

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from protocol.request_types.describe_quorum import DescribeQuorumRequest

METADATA_TOPIC: Final = "__cluster_metadata"
_UNKNOWN: Final = -1
# Kafka's Errors.UNKNOWN_TOPIC_OR_PARTITION.message(), which getPartitionLevelErrorResponse sends.
_NOT_HOSTED: Final = "This server does not host this topic-partition."


def _names_the_metadata_partition(request: DescribeQuorumRequest) -> bool:
    """Kafka's hasValidTopicPartition: exactly one topic with exactly partition 0 of the metadata log."""
    if len(request.topics) != 1 or len(request.topics[0].partitions) != 1:
        return False
    topic = request.topics[0]
    return topic.topic_name == METADATA_TOPIC and topic.partitions[0].partition_index == 0


def _unknown_partitions(request: DescribeQuorumRequest) -> list[dict[str, object]]:
    return [{"topic_name": t.topic_name, "partitions": [
        {"partition_index": p.partition_index, "error_code": ErrorCode.unknown_topic_or_partition,
         "error_message": _NOT_HOSTED, "leader_id": 0, "leader_epoch": 0, "high_watermark": 0,
         "current_voters": [], "observers": []} for p in t.partitions]} for t in request.topics]


def _replica(node_id: int, directory_id: uuid.UUID | None, fetched_ms: int) -> dict[str, object]:
    return {"replica_id": node_id, "replica_directory_id": directory_id, "log_end_offset": _UNKNOWN,
            "last_fetch_timestamp": fetched_ms, "last_caught_up_timestamp": fetched_ms}


def _quorum(ctx: RequestContext) -> dict[str, object]:
    me = ctx.broker.node_id
    now_ms = int(time.time() * 1000)
    observers = sorted(b.node_id for b in ctx.broker.cluster.live_brokers() if b.node_id != me)
    partition = {"partition_index": 0, "error_code": ErrorCode.none, "error_message": "", "leader_id": me,
                 "leader_epoch": 0, "high_watermark": _UNKNOWN,
                 "current_voters": [_replica(me, ctx.broker.directory_id, now_ms)],
                 "observers": [_replica(b, None, _UNKNOWN) for b in observers]}
    listeners = [{"name": listener.name, "host": host, "port": port}
                 for listener in ctx.broker.config.client_listeners for host, port in [listener.advertised]]
    return {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [partition]}],
            "nodes": [{"node_id": me, "listeners": listeners}]}


async def handle(ctx: RequestContext, request: DescribeQuorumRequest) -> object:
    try:
        require_cluster(ctx, AclOperation.DESCRIBE)
    except KafkaError as exc:
        return ctx.respond({"error_code": exc.code, "error_message": exc.message, "topics": [], "nodes": []})
    if not _names_the_metadata_partition(request):
        return ctx.respond({"error_code": ErrorCode.none, "error_message": "", "topics": _unknown_partitions(request),
                            "nodes": []})
    return ctx.respond({"error_code": ErrorCode.none, "error_message": ""} | _quorum(ctx))


HANDLER = Handler(api_key=ApiKey.DESCRIBE_QUORUM, min_version=0, max_version=2, handle=handle)
