"""ShareAcknowledge v1-2 (KIP-932).

Behaviour: a share group member acknowledges records it acquired, in its share session on this
broker: the session must exist (SHARE_SESSION_NOT_FOUND) and the epoch be the next one
(INVALID_SHARE_SESSION_EPOCH; 0 cannot open a session here), -1 closes the session after the
acknowledgements and releases whatever the member still holds. Each acknowledgement batch gives
one type for its whole range or one per offset: ACCEPT (1), RELEASE (2), REJECT (3), GAP (0,
offsets with no record) and, v2, RENEW (4). Each partition's outcome is its error code:
INVALID_RECORD_STATE for an offset the member does not hold, UNKNOWN_TOPIC_OR_PARTITION for a
share-partition its group never initialized, and the checks of a ShareFetch.
The acknowledgement is in __share_group_state before the answer goes.
Version notes: v2 (KIP-1222) adds IsRenewAck and the RENEW type.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..handler import Handler, RequestContext
from .share_common import leader, open_request, refused, share_topics

if TYPE_CHECKING:
    from protocol.request_types.share_acknowledge import ShareAcknowledgeRequest


async def handle(ctx: RequestContext, request: ShareAcknowledgeRequest) -> object:
    try:
        coordinator, group_id, member_id = open_request(ctx, request)
        errors: dict[tuple[uuid.UUID, int], KafkaError] = {}
        named, acks = share_topics(ctx, request.topics, errors)
        results, lock_ms = await coordinator.share_acknowledge(group_id, member_id,
                                                               request.share_session_epoch, acks)
    except KafkaError as exc:
        return refused(ctx, exc)
    topics: dict[uuid.UUID, list[dict[str, object]]] = {}
    for key in dict.fromkeys([*named, *errors]):
        error = errors.get(key) or results.get(key)
        topics.setdefault(key[0], []).append({
            "partition_index": key[1], "error_code": error.code if error else ErrorCode.none,
            "error_message": error.message if error else None, "current_leader": leader(ctx, named.get(key))})
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None,
                        "acquisition_lock_timeout": lock_ms, "node_endpoints": [],
                        "responses": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()]})


HANDLER = Handler(api_key=ApiKey.SHARE_ACKNOWLEDGE, min_version=1, max_version=2, handle=handle)
