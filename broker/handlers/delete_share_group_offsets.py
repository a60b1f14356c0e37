"""DeleteShareGroupOffsets v0 (KIP-932).

Behaviour: deletes a share group's state for the named topics (kafka-share-groups
--delete-offsets): the group's next fetch from them starts where share.auto.offset.reset says. The
group must have no members (NON_EMPTY_GROUP) and exist (GROUP_ID_NOT_FOUND); DELETE on the group,
else GROUP_AUTHORIZATION_FAILED for the whole request. Per topic: UNKNOWN_TOPIC_OR_PARTITION,
TOPIC_AUTHORIZATION_FAILED (READ on the topic). In cluster mode the group coordinator deletes the
states at their share coordinators (DeleteShareGroupState); a topic whose states one of them could
not delete gets its error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized, denied, require
from ..handler import Handler, RequestContext
from .share_common import share_coordinator

if TYPE_CHECKING:
    from protocol.request_types.delete_share_group_offsets import DeleteShareGroupOffsetsRequest


async def handle(ctx: RequestContext, request: DeleteShareGroupOffsetsRequest) -> object:
    results: list[dict[str, object]] = []
    ids = []
    for t in request.topics:
        meta = ctx.broker.logs.topics.get(t.topic_name)
        error: KafkaError | None = None
        if not authorized(ctx, AclOperation.READ, ResourceType.TOPIC, t.topic_name):
            error = denied(ctx, AclOperation.READ, ResourceType.TOPIC, t.topic_name)
        elif meta is None:
            error = KafkaError(ErrorCode.unknown_topic_or_partition, f"Topic {t.topic_name} does not exist")
        else:
            ids.append(meta.topic_id)
        results.append({"topic_name": t.topic_name, "topic_id": meta.topic_id if meta else None,
                        "error_code": error.code if error else ErrorCode.none,
                        "error_message": error.message if error else None})
    try:
        require(ctx, AclOperation.DELETE, ResourceType.GROUP, request.group_id)
        failed = await share_coordinator(ctx).delete_offsets(request.group_id, ids)
    except KafkaError as exc:
        return ctx.respond({"throttle_time": 0, "error_code": exc.code, "error_message": exc.message,
                            "responses": []})
    for result in results:
        if (error := failed.get(result["topic_id"])) is not None:  # type: ignore[call-overload]
            result |= {"error_code": error.code, "error_message": error.message}
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None,
                        "responses": results})


HANDLER = Handler(api_key=ApiKey.DELETE_SHARE_GROUP_OFFSETS, min_version=0, max_version=0, handle=handle)
