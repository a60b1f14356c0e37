"""AlterReplicaLogDirs v1-2.

Behaviour: eosbroker keeps every log in its one log dir (log.dirs; DescribeLogDirs names it), so a
replica can only be asked to stay where it is, as Kafka 4.4's ReplicaManager.alterReplicaLogDirs
answers for each partition, in its order: a topic name too long for a future log dir's name
INVALID_TOPIC_EXCEPTION; a path other than the log dir (absolute, as DescribeLogDirs gives it)
LOG_DIR_NOT_FOUND; a partition the cluster lacks UNKNOWN_TOPIC_OR_PARTITION; one whose log is not
here (cluster mode: led by another broker) REPLICA_NOT_AVAILABLE; one already here NONE, nothing
to move. A partition named twice takes its last answer (Kafka's map by partition). Needs ALTER on
the CLUSTER, else every partition named gets CLUSTER_AUTHORIZATION_FAILED, per directory entry as
AlterReplicaLogDirsRequest.getErrorResponse answers.
Version notes: v0 is gone from Kafka 4; v2 is flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from storage.api import TopicPartition

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from protocol.request_types.alter_replica_log_dirs import AlterReplicaLogDirsRequest

# Kafka's UnifiedLog.logFutureDirName: "<topic>-<partition>.<32 hex digits>-future", at most 255.
_FUTURE_SUFFIX_CHARS: Final = len(".") + 32 + len("-future")
_MAX_DIR_NAME: Final = 255


def _log_dirs(ctx: RequestContext) -> frozenset[str]:
    data_dir = ctx.broker.logs.data_dir
    return frozenset({str(data_dir.absolute()), str(data_dir.resolve())})


def _error(ctx: RequestContext, tp: TopicPartition, path: str, log_dirs: frozenset[str]) -> ErrorCode:
    if len(f"{tp.topic}-{tp.partition}") + _FUTURE_SUFFIX_CHARS > _MAX_DIR_NAME:
        return ErrorCode.invalid_topic_exception
    if path not in log_dirs:
        return ErrorCode.log_dir_not_found
    if ctx.broker.cluster.leader(tp) is None:
        return ErrorCode.unknown_topic_or_partition
    if ctx.broker.logs.find_log(tp) is None:
        return ErrorCode.replica_not_available
    return ErrorCode.none


async def handle(ctx: RequestContext, request: AlterReplicaLogDirsRequest) -> object:
    require_cluster(ctx, AclOperation.ALTER)  # dispatch answers each partition with the error
    log_dirs = _log_dirs(ctx)
    errors: dict[TopicPartition, ErrorCode] = {}
    for d in request.dirs:
        for t in d.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p)
                errors[tp] = _error(ctx, tp, d.path, log_dirs)
    by_topic: dict[str, list[dict[str, object]]] = {}
    for tp, code in errors.items():
        by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition, "error_code": code})
    return ctx.respond({"throttle_time": 0, "results": [{"topic_name": topic, "partitions": partitions}
                                                        for topic, partitions in by_topic.items()]})


HANDLER = Handler(api_key=ApiKey.ALTER_REPLICA_LOG_DIRS, min_version=1, max_version=2, handle=handle)
