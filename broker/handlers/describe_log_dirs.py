"""DescribeLogDirs v1-5.

Behaviour: one log dir (log.dirs, absolute), holding every partition this broker has a log of (all
of them on a single node; in a cluster, those it leads); each partition's size is the bytes of its
segment files, offset_lag 0 and is_future_key false (no replica moves). A null topic list means all
topics; named topics and partitions that do not exist or have no log here are left out, and so is a
topic with none here, as Kafka's ReplicaManager.describeLogDirs lists the logs it hosts.
Version notes: v3+ has a top-level error code; v4+ gives the volume's total and usable bytes
(statvfs); v5 adds is_cordoned, always false.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from storage.api import TopicPartition

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from protocol.request_types.describe_log_dirs import DescribeLogDirsRequest


def _wanted(ctx: RequestContext, request: DescribeLogDirsRequest) -> dict[str, list[int]]:
    topics = ctx.broker.logs.topics
    if request.topics is None:
        return {name: list(range(meta.partitions)) for name, meta in topics.items()}
    out: dict[str, list[int]] = {}
    for t in request.topics:
        meta = topics.get(t.topic)
        if meta is not None:
            out.setdefault(t.topic, []).extend(p for p in t.partitions if 0 <= p < meta.partitions)
    return out


async def handle(ctx: RequestContext, request: DescribeLogDirsRequest) -> object:
    require_cluster(ctx, AclOperation.DESCRIBE)
    logs = ctx.broker.logs
    topics = []
    for name, partitions in _wanted(ctx, request).items():
        hosted = [(p, plog) for p in sorted(set(partitions))
                  if (plog := logs.find_log(TopicPartition(name, p))) is not None]
        parts = [{"partition_index": p, "partition_size": plog.size_bytes, "offset_lag": 0, "is_future_key": False}
                 for p, plog in hosted]
        if parts:
            topics.append({"name": name, "partitions": parts})
    st = os.statvfs(logs.data_dir)
    result = {"error_code": ErrorCode.none, "log_dir": str(logs.data_dir.resolve()), "topics": topics,
              "total_bytes": st.f_blocks * st.f_frsize, "usable_bytes": st.f_bavail * st.f_frsize}
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "results": [result]})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_LOG_DIRS, min_version=1, max_version=5, handle=handle)
