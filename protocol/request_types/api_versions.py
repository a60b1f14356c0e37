"""ApiVersions requests v0-5 as kio reads them, for broker/handlers/api_versions.py."""

from typing import TypeAlias

from kio.schema.api_versions.v0 import request as v0
from kio.schema.api_versions.v1 import request as v1
from kio.schema.api_versions.v2 import request as v2
from kio.schema.api_versions.v3 import request as v3
from kio.schema.api_versions.v4 import request as v4

from .. import newer_schemas

__all__ = ("ApiVersionsRequestV5", "ApiVersionsRequest",)

ApiVersionsRequest: TypeAlias = (
    v0.ApiVersionsRequest | v1.ApiVersionsRequest | v2.ApiVersionsRequest | v3.ApiVersionsRequest
    | v4.ApiVersionsRequest | newer_schemas.ApiVersionsRequestV5
)

# v5 (KIP-1242): the request names the cluster and node the client means to reach
ApiVersionsRequestV5: TypeAlias = newer_schemas.ApiVersionsRequestV5
