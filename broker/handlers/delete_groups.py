"""DeleteGroups v0-2.

Behaviour: deletes Empty groups with their offsets (tombstones in __consumer_offsets, so they stay
deleted after a restart). A group with members is NON_EMPTY_GROUP, an unknown one
GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import KafkaError

from ..handler import Handler, RequestContext
from .group_common import group_coordinator


async def handle(ctx: RequestContext, request: Any) -> Any:
    names = list(request.groups_names)
    try:
        results = await group_coordinator(ctx).delete_groups(names)
    except KafkaError as exc:
        results = dict.fromkeys(names, exc.code)
    return ctx.respond({
        "throttle_time": 0,
        "results": [{"group_id": g, "error_code": results[g]} for g in dict.fromkeys(names)],
    })


HANDLER = Handler(api_key=ApiKey.DELETE_GROUPS, min_version=0, max_version=2, handle=handle)
