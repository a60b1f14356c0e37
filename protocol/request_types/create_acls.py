"""CreateAcls requests v1-3 as kio reads them, for broker/handlers/create_acls.py."""

from typing import TypeAlias

from kio.schema.create_acls.v1 import request as v1
from kio.schema.create_acls.v2 import request as v2
from kio.schema.create_acls.v3 import request as v3

__all__ = ("AclCreation", "CreateAclsRequest")

AclCreation: TypeAlias = v1.AclCreation | v2.AclCreation | v3.AclCreation
CreateAclsRequest: TypeAlias = v1.CreateAclsRequest | v2.CreateAclsRequest | v3.CreateAclsRequest
