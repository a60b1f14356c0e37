"""ListOffsets requests v1-11 as kio reads them, for broker/handlers/list_offsets.py."""

from typing import TypeAlias

from kio.schema.list_offsets.v1 import request as v1
from kio.schema.list_offsets.v2 import request as v2
from kio.schema.list_offsets.v3 import request as v3
from kio.schema.list_offsets.v4 import request as v4
from kio.schema.list_offsets.v5 import request as v5
from kio.schema.list_offsets.v6 import request as v6
from kio.schema.list_offsets.v7 import request as v7
from kio.schema.list_offsets.v8 import request as v8
from kio.schema.list_offsets.v9 import request as v9
from kio.schema.list_offsets.v10 import request as v10
from kio.schema.list_offsets.v11 import request as v11

__all__ = ("ListOffsetsPartition", "ListOffsetsTopic", "ListOffsetsRequest")

ListOffsetsPartition: TypeAlias = (
    v1.ListOffsetsPartition | v2.ListOffsetsPartition | v3.ListOffsetsPartition | v4.ListOffsetsPartition
    | v5.ListOffsetsPartition | v6.ListOffsetsPartition | v7.ListOffsetsPartition | v8.ListOffsetsPartition
    | v9.ListOffsetsPartition | v10.ListOffsetsPartition | v11.ListOffsetsPartition
)
ListOffsetsTopic: TypeAlias = (
    v1.ListOffsetsTopic | v2.ListOffsetsTopic | v3.ListOffsetsTopic | v4.ListOffsetsTopic | v5.ListOffsetsTopic
    | v6.ListOffsetsTopic | v7.ListOffsetsTopic | v8.ListOffsetsTopic | v9.ListOffsetsTopic | v10.ListOffsetsTopic
    | v11.ListOffsetsTopic
)
ListOffsetsRequest: TypeAlias = (
    v1.ListOffsetsRequest | v2.ListOffsetsRequest | v3.ListOffsetsRequest | v4.ListOffsetsRequest
    | v5.ListOffsetsRequest | v6.ListOffsetsRequest | v7.ListOffsetsRequest | v8.ListOffsetsRequest
    | v9.ListOffsetsRequest | v10.ListOffsetsRequest | v11.ListOffsetsRequest
)
