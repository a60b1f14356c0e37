"""OffsetFetch requests v1-10 as kio reads them, for broker/handlers/offset_fetch.py."""

from typing import TypeAlias

from kio.schema.offset_fetch.v1 import request as v1
from kio.schema.offset_fetch.v2 import request as v2
from kio.schema.offset_fetch.v3 import request as v3
from kio.schema.offset_fetch.v4 import request as v4
from kio.schema.offset_fetch.v5 import request as v5
from kio.schema.offset_fetch.v6 import request as v6
from kio.schema.offset_fetch.v7 import request as v7
from kio.schema.offset_fetch.v8 import request as v8
from kio.schema.offset_fetch.v9 import request as v9
from kio.schema.offset_fetch.v10 import request as v10

__all__ = (
    "OffsetFetchRequestV8Plus", "OffsetFetchRequestTopic", "OffsetFetchRequest", "OffsetFetchRequestTopics",
    "OffsetFetchRequestGroup",
)

OffsetFetchRequestTopic: TypeAlias = (
    v1.OffsetFetchRequestTopic | v2.OffsetFetchRequestTopic | v3.OffsetFetchRequestTopic
    | v4.OffsetFetchRequestTopic | v5.OffsetFetchRequestTopic | v6.OffsetFetchRequestTopic
    | v7.OffsetFetchRequestTopic
)
OffsetFetchRequest: TypeAlias = (
    v1.OffsetFetchRequest | v2.OffsetFetchRequest | v3.OffsetFetchRequest | v4.OffsetFetchRequest
    | v5.OffsetFetchRequest | v6.OffsetFetchRequest | v7.OffsetFetchRequest | v8.OffsetFetchRequest
    | v9.OffsetFetchRequest | v10.OffsetFetchRequest
)
OffsetFetchRequestTopics: TypeAlias = (
    v8.OffsetFetchRequestTopics | v9.OffsetFetchRequestTopics | v10.OffsetFetchRequestTopics
)
OffsetFetchRequestGroup: TypeAlias = (
    v8.OffsetFetchRequestGroup | v9.OffsetFetchRequestGroup | v10.OffsetFetchRequestGroup
)

# v8+: a batch of groups, not one group_id
OffsetFetchRequestV8Plus: TypeAlias = v8.OffsetFetchRequest | v9.OffsetFetchRequest | v10.OffsetFetchRequest
