"""UpdateFeatures v0-2.

Behaviour: transaction.version may be upgraded or downgraded between 0 and 2
(`kafka-features upgrade/downgrade --feature transaction.version=N`); the change is persisted
before the answer and raises the finalized-features epoch, so clients see it on their next
ApiVersions. Other features are fixed: asking for the level already finalized changes nothing and
succeeds, as Kafka's controller answers an update to the current level; any other level, or a
feature not in the table, is INVALID_UPDATE_VERSION saying so, with Kafka's messages for a
downgrade sent as an upgrade and the reverse. validate_only checks without changing anything.
All updates of a request are applied or none: as Kafka's controller answers, a failure is the
top-level error ("The update failed for all features since ...") with no per-feature results.
Version notes: v0 says allow_downgrade instead of v1's upgrade_type (v0 downgrades are safe ones);
v2 drops the per-feature results of a success too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.build import field_or
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..features import FinalizedFeatures, UpgradeType
from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from protocol.request_types.update_features import FeatureUpdateKey, FeatureUpdateKeyV0, UpdateFeaturesRequest


def _is_v0(entity: FeatureUpdateKey) -> TypeIs[FeatureUpdateKeyV0]:
    # by the class's version, not isinstance: the union's classes load only for type checking
    return entity.__version__ == 0


def _upgrade_type(update: FeatureUpdateKey) -> int:
    if _is_v0(update):
        return UpgradeType.SAFE_DOWNGRADE if update.allow_downgrade else UpgradeType.UPGRADE
    return int(update.upgrade_type)


async def _result(features: FinalizedFeatures, update: FeatureUpdateKey, validate_only: bool) -> dict[str, object]:
    try:
        await features.update(update.feature, update.max_version_level, _upgrade_type(update), validate_only)
    except KafkaError as exc:
        return {"feature": update.feature, "error_code": exc.code, "error_message": exc.message}
    return {"feature": update.feature, "error_code": ErrorCode.none, "error_message": None}


async def _first_failure(features: FinalizedFeatures, request: UpdateFeaturesRequest) -> dict[str, object] | None:
    """Kafka applies all updates or none: the first failure of a dry run, if any."""
    names = [u.feature for u in request.feature_updates]
    if len(set(names)) != len(names):
        return {"error_code": ErrorCode.invalid_request,
                "error_message": "The request contains multiple updates for the same feature."}
    for update in request.feature_updates:
        result = await _result(features, update, validate_only=True)
        if result["error_code"] != ErrorCode.none:
            return result
    return None


async def handle(ctx: RequestContext, request: UpdateFeaturesRequest) -> object:
    require_cluster(ctx, AclOperation.ALTER)
    features = ctx.broker.features
    failed = await _first_failure(features, request)
    if failed is not None:  # as Kafka's controller answers: nothing applied, no per-feature results
        return ctx.respond({"throttle_time": 0, "error_code": failed["error_code"], "error_message":
                            "The update failed for all features since the following feature had an error: "
                            f"{failed['error_message']}", "results": []})
    validate_only = bool(field_or(request, "validate_only", False))
    results = [await _result(features, u, validate_only) for u in request.feature_updates]
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "results": results})


HANDLER = Handler(api_key=ApiKey.UPDATE_FEATURES, min_version=0, max_version=2, handle=handle)
