"""InitProducerId v0-5 (interim: idempotent producers only).

Behaviour: a request without a transactional id gets a fresh producer id with epoch 0. Ids come
from blocks of 1000 whose high mark is persisted before use, so ids are never reused across
restarts. Transactional ids are answered COORDINATOR_NOT_AVAILABLE until the transaction
coordinator serves them.
"""

from __future__ import annotations

import os
from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..handler import Handler, RequestContext

_BLOCK = 1000


def _next_producer_id(ctx: RequestContext) -> int:
    state = ctx.broker.extras.setdefault("pid_block", {"next": 0, "end": 0})
    if state["next"] >= state["end"]:
        path = ctx.broker.config.data_dir / "producer_id_block"
        start = int(path.read_text()) if path.exists() else 0
        tmp = path.with_suffix(".tmp")
        tmp.write_text(str(start + _BLOCK))
        os.replace(tmp, path)
        state["next"], state["end"] = start, start + _BLOCK
    pid = state["next"]
    state["next"] += 1
    return pid


async def handle(ctx: RequestContext, request: Any) -> Any:
    if request.transactional_id is not None:
        return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.coordinator_not_available,
                            "producer_id": -1, "producer_epoch": -1})
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none,
                        "producer_id": _next_producer_id(ctx), "producer_epoch": 0})


HANDLER = Handler(api_key=ApiKey.INIT_PRODUCER_ID, min_version=0, max_version=5, handle=handle)
