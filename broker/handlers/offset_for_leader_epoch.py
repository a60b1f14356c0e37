"""OffsetForLeaderEpoch v2-4.

Behaviour: every batch is written with leader epoch 0 and the leader never changes, so for a
requested epoch of 0 (or above) the end offset is the log end offset with epoch 0; a negative
epoch is UNDEFINED. A current_leader_epoch above ours is UNKNOWN_LEADER_EPOCH (a client that
knows a newer leader than this one), one below it FENCED_LEADER_EPOCH. Java consumers call this
to validate positions after seeks (KIP-320).
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..handler import Handler, RequestContext, check_leader_epoch


def _answer(ctx: RequestContext, topic: str, p: Any) -> dict[str, Any]:
    entry = {"partition": p.partition, "error_code": ErrorCode.none, "leader_epoch": -1, "end_offset": -1}
    try:
        plog = ctx.broker.logs.get_log(TopicPartition(topic, p.partition))
        check_leader_epoch(getattr(p, "current_leader_epoch", -1))
    except KafkaError as exc:
        return entry | {"error_code": exc.code}
    if p.leader_epoch < 0:
        return entry
    return entry | {"leader_epoch": 0, "end_offset": plog.log_end_offset}


async def handle(ctx: RequestContext, request: Any) -> Any:
    topics = [{"topic": t.topic, "partitions": [_answer(ctx, t.topic, p) for p in t.partitions]}
              for t in request.topics]
    return ctx.respond({"throttle_time": 0, "topics": topics})


HANDLER = Handler(api_key=ApiKey.OFFSET_FOR_LEADER_EPOCH, min_version=2, max_version=4, handle=handle)
