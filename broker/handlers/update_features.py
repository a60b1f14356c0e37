"""UpdateFeatures v0-2.

Behaviour: a single node's features are fixed (broker/features.py): asking for the level already
finalized changes nothing and succeeds, as Kafka's controller answers an update to the current
level; any other level, or a feature not in the table, is INVALID_UPDATE_VERSION saying so.
validate_only answers the same.
Version notes: v0-1 answer per feature; v2 drops the per-feature results and, as Kafka does, puts
the first failure in the top-level error ("The update failed for all features since ...").
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..features import FEATURES
from ..handler import Handler, RequestContext


def check_update(name: str, level: int) -> None:
    feature = next((f for f in FEATURES if f.name == name), None)
    if feature is None:
        raise KafkaError(ErrorCode.invalid_update_version, f"Invalid update version {level} for feature {name}. "
                                                           "eosbroker does not implement this feature.")
    if level != feature.finalized_level:
        raise KafkaError(ErrorCode.invalid_update_version,
                         f"Invalid update version {level} for feature {name}. eosbroker implements level "
                         f"{feature.finalized_level} only: a single node's features are fixed.")


def _result(update: Any) -> dict[str, Any]:
    try:
        check_update(update.feature, update.max_version_level)
    except KafkaError as exc:
        return {"feature": update.feature, "error_code": exc.code, "error_message": exc.message}
    return {"feature": update.feature, "error_code": ErrorCode.none, "error_message": None}


async def handle(ctx: RequestContext, request: Any) -> Any:
    results = [_result(u) for u in request.feature_updates]
    failed = next((r for r in results if r["error_code"] != ErrorCode.none), None)
    if ctx.version >= 2 and failed is not None:
        return ctx.respond({"throttle_time": 0, "error_code": failed["error_code"], "error_message":
                            "The update failed for all features since the following feature had an error: "
                            f"{failed['error_message']}", "results": []})
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "results": results})


HANDLER = Handler(api_key=ApiKey.UPDATE_FEATURES, min_version=0, max_version=2, handle=handle)
