"""ListGroups requests v0-5 as kio reads them, for broker/handlers/list_groups.py."""

from typing import TypeAlias

from kio.schema.list_groups.v0 import request as v0
from kio.schema.list_groups.v1 import request as v1
from kio.schema.list_groups.v2 import request as v2
from kio.schema.list_groups.v3 import request as v3
from kio.schema.list_groups.v4 import request as v4
from kio.schema.list_groups.v5 import request as v5

__all__ = ("ListGroupsRequest",)

ListGroupsRequest: TypeAlias = (
    v0.ListGroupsRequest | v1.ListGroupsRequest | v2.ListGroupsRequest | v3.ListGroupsRequest | v4.ListGroupsRequest
    | v5.ListGroupsRequest
)
