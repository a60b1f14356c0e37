"""DeleteAcls requests v1-3 as kio reads them, for broker/handlers/delete_acls.py."""

from typing import TypeAlias

from kio.schema.delete_acls.v1 import request as v1
from kio.schema.delete_acls.v2 import request as v2
from kio.schema.delete_acls.v3 import request as v3

__all__ = ("DeleteAclsFilter", "DeleteAclsRequest")

DeleteAclsFilter: TypeAlias = v1.DeleteAclsFilter | v2.DeleteAclsFilter | v3.DeleteAclsFilter
DeleteAclsRequest: TypeAlias = v1.DeleteAclsRequest | v2.DeleteAclsRequest | v3.DeleteAclsRequest
