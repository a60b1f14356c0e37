"""DeleteGroups requests v0-3 as kio reads them, for broker/handlers/delete_groups.py."""

from typing import TypeAlias

from kio.schema.delete_groups.v0 import request as v0
from kio.schema.delete_groups.v1 import request as v1
from kio.schema.delete_groups.v2 import request as v2

from .. import newer_schemas

__all__ = ("DeleteGroupsRequest",)

DeleteGroupsRequest: TypeAlias = (
    v0.DeleteGroupsRequest | v1.DeleteGroupsRequest | v2.DeleteGroupsRequest | newer_schemas.DeleteGroupsRequestV3
)
