"""Metadata requests v0-13 as kio reads them, for broker/handlers/metadata.py."""

from typing import TypeAlias

from kio.schema.metadata.v0 import request as v0
from kio.schema.metadata.v1 import request as v1
from kio.schema.metadata.v2 import request as v2
from kio.schema.metadata.v3 import request as v3
from kio.schema.metadata.v4 import request as v4
from kio.schema.metadata.v5 import request as v5
from kio.schema.metadata.v6 import request as v6
from kio.schema.metadata.v7 import request as v7
from kio.schema.metadata.v8 import request as v8
from kio.schema.metadata.v9 import request as v9
from kio.schema.metadata.v10 import request as v10
from kio.schema.metadata.v11 import request as v11
from kio.schema.metadata.v12 import request as v12
from kio.schema.metadata.v13 import request as v13

__all__ = ("MetadataRequestTopic", "MetadataRequest")

MetadataRequestTopic: TypeAlias = (
    v0.MetadataRequestTopic | v1.MetadataRequestTopic | v2.MetadataRequestTopic | v3.MetadataRequestTopic
    | v4.MetadataRequestTopic | v5.MetadataRequestTopic | v6.MetadataRequestTopic | v7.MetadataRequestTopic
    | v8.MetadataRequestTopic | v9.MetadataRequestTopic | v10.MetadataRequestTopic | v11.MetadataRequestTopic
    | v12.MetadataRequestTopic | v13.MetadataRequestTopic
)
MetadataRequest: TypeAlias = (
    v0.MetadataRequest | v1.MetadataRequest | v2.MetadataRequest | v3.MetadataRequest | v4.MetadataRequest
    | v5.MetadataRequest | v6.MetadataRequest | v7.MetadataRequest | v8.MetadataRequest | v9.MetadataRequest
    | v10.MetadataRequest | v11.MetadataRequest | v12.MetadataRequest | v13.MetadataRequest
)
