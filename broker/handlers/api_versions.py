"""ApiVersions v0-4.

Behaviour: answers from the dispatch table, so what is advertised is what is implemented.
Version notes: the response header is always v0 (kio's schemas encode that). A request at a version
above 4 gets a v0 body with UNSUPPORTED_VERSION and our ApiVersions range (KIP-511); the connection
answers that before parsing (see broker/connection.py). v3+ carries client software name/version,
which Kafka validates; we accept what clients send and only log it. v3+ carries the supported
and finalized features of broker/features.py (kafka-features describe prints them) and the
finalized-features epoch; as Kafka does, v3 leaves out supported features whose minimum version is
0 (finalized ones are all listed, except those finalized at level 0).
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..features import FEATURES, FinalizedFeatures
from ..handler import Handler, RequestContext


def api_keys(ctx: RequestContext) -> list[dict[str, int]]:
    return [
        {"api_key": int(h.api_key), "min_version": h.min_version, "max_version": h.max_version}
        for h in sorted(ctx.broker.handlers.values(), key=lambda h: h.api_key)
    ]


def features(version: int, finalized: FinalizedFeatures) -> dict[str, Any]:
    if version < 3:
        return {}
    listed = [f for f in FEATURES if version >= 4 or f.min_version > 0]
    return {
        "supported_features": [{"name": f.name, "min_version": f.min_version, "max_version": f.max_version}
                               for f in listed],
        "finalized_features_epoch": finalized.epoch,
        # Kafka's createFinalizedFeatureKeys: every feature finalized above level 0, at any version.
        "finalized_features": [{"name": f.name, "min_version_level": level, "max_version_level": level}
                               for f in FEATURES if (level := finalized.level(f.name)) > 0],
    }


async def handle(ctx: RequestContext, request: Any) -> Any:
    return ctx.respond({"error_code": ErrorCode.none, "api_keys": api_keys(ctx), "throttle_time": 0}
                       | features(ctx.version, ctx.broker.features))


HANDLER = Handler(api_key=ApiKey.API_VERSIONS, min_version=0, max_version=4, handle=handle)
