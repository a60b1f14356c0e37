"""ApiVersions v0-5.

Behaviour: answers from the dispatch table, so what is advertised is what is implemented.
Version notes: the response header is always v0 (kio's schemas encode that). A request at a version
above 4 gets a v0 body with UNSUPPORTED_VERSION and our ApiVersions range (KIP-511); the connection
answers that before parsing (see broker/connection/requests.py). v3+ carries client software name/version,
which Kafka validates; we accept what clients send and only log it. v3+ carries the supported
and finalized features of broker/features.py (kafka-features describe prints them) and the
finalized-features epoch; as Kafka does, v3 leaves out supported features whose minimum version is
0 (finalized ones are all listed, except those finalized at level 0). v5 (KIP-1242) names the
cluster and node the client means to reach, once it knows them: when either is not this broker's
(its address now belongs to another broker or another cluster), the answer is
REBOOTSTRAP_REQUIRED with no API keys, as Kafka 4.4's KafkaApis answers, and the client fetches
its metadata again from its bootstrap servers.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Final

from protocol.api_keys import ApiKey
from protocol.codec import encode_response
from protocol.errors import ErrorCode
from protocol.newer_schemas import ApiVersionsRequestV5

from ..features import FEATURES, FinalizedFeatures
from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from protocol.request_types.api_versions import ApiVersionsRequest


def api_keys(ctx: RequestContext) -> list[dict[str, int]]:
    return [
        {"api_key": int(h.api_key), "min_version": h.min_version, "max_version": h.max_version}
        for h in sorted(ctx.broker.handlers.values(), key=lambda h: h.api_key)
    ]


def features(version: int, finalized: FinalizedFeatures) -> dict[str, object]:
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


# Encoded response bodies (after the correlation id) by what they depend on. Every client sends
# ApiVersions first on every connection, so a flood of connections is a flood of these: building
# and encoding one through kio cost ~40 % of the broker's CPU with 2,000 connections asking every 2 s.
# (version, handler table, features epoch, finalized levels) -> the encoded body
_BODIES: dict[tuple[int, int, int, tuple[tuple[str, int], ...]], bytes] = {}
_MAX_BODIES: Final = 64
_FRAME_HEAD: Final = struct.Struct(">ii")  # size, correlation id (the response header is v0)


def _body(ctx: RequestContext) -> bytes:
    finalized = ctx.broker.features
    key = (ctx.version, id(ctx.broker.handlers), finalized.epoch, tuple(sorted(finalized.levels.items())))
    body = _BODIES.get(key)
    if body is None:
        entity = ctx.respond({"error_code": ErrorCode.none, "api_keys": api_keys(ctx), "throttle_time": 0}
                             | features(ctx.version, finalized))
        body = encode_response(0, entity)[_FRAME_HEAD.size:]
        if len(_BODIES) >= _MAX_BODIES:
            _BODIES.clear()
        _BODIES[key] = body
    return body


def _meant_for_another(ctx: RequestContext, request: ApiVersionsRequest) -> bool:
    """Kafka's clusterIdOrNodeIdIsInvalid: only a request naming a cluster is checked."""
    if not isinstance(request, ApiVersionsRequestV5) or request.cluster_id is None:
        return False
    return request.cluster_id != ctx.broker.cluster_id or request.node_id != ctx.broker.node_id


async def handle(ctx: RequestContext, request: ApiVersionsRequest) -> bytes:
    if _meant_for_another(ctx, request):
        return encode_response(ctx.header.correlation_id, ctx.respond(
            {"error_code": ErrorCode.rebootstrap_required, "api_keys": [], "throttle_time": 0}))
    body = _body(ctx)
    return _FRAME_HEAD.pack(4 + len(body), ctx.header.correlation_id) + body


HANDLER = Handler(api_key=ApiKey.API_VERSIONS, min_version=0, max_version=5, handle=handle)
