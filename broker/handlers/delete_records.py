"""DeleteRecords v0-2.

Behaviour: moves each partition's log start offset up to the requested offset (-1 means the high
watermark), durably (storage/log_start_offset.py) before answering, and deletes the segments that
lie wholly below it. The answer's low_watermark is the log start offset afterwards; an offset at
or below it changes nothing. An offset above the high watermark (or below -1) gives
OFFSET_OUT_OF_RANGE, a topic whose cleanup.policy lacks delete POLICY_VIOLATION (as for the
internal topics), an unknown partition UNKNOWN_TOPIC_OR_PARTITION; those carry low_watermark -1.
Fetch, ListOffsets (earliest) and retention honour the new start. The timeout is not needed: a
single replica answers at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized
from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from protocol.request_types.delete_records import DeleteRecordsRequest


async def _delete(ctx: RequestContext, tp: TopicPartition, offset: int, allowed: bool) -> dict[str, object]:
    if not allowed:
        return {"partition_index": tp.partition, "low_watermark": -1,
                "error_code": ErrorCode.topic_authorization_failed}
    try:
        low_watermark = await ctx.broker.logs.get_log(tp).delete_records_before(offset)
    except KafkaError as exc:
        return {"partition_index": tp.partition, "low_watermark": -1, "error_code": exc.code}
    return {"partition_index": tp.partition, "low_watermark": low_watermark, "error_code": ErrorCode.none}


async def handle(ctx: RequestContext, request: DeleteRecordsRequest) -> object:
    topics = []
    for topic in request.topics:
        allowed = authorized(ctx, AclOperation.DELETE, ResourceType.TOPIC, topic.name)
        parts = [await _delete(ctx, TopicPartition(topic.name, p.partition_index), p.offset, allowed)
                 for p in topic.partitions]
        topics.append({"name": topic.name, "partitions": parts})
    return ctx.respond({"throttle_time": 0, "topics": topics})


HANDLER = Handler(api_key=ApiKey.DELETE_RECORDS, min_version=0, max_version=2, handle=handle)
