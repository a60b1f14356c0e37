"""JoinGroup requests v0-9 as kio reads them, for broker/handlers/join_group.py."""

from typing import TypeAlias

from kio.schema.join_group.v0 import request as v0
from kio.schema.join_group.v1 import request as v1
from kio.schema.join_group.v2 import request as v2
from kio.schema.join_group.v3 import request as v3
from kio.schema.join_group.v4 import request as v4
from kio.schema.join_group.v5 import request as v5
from kio.schema.join_group.v6 import request as v6
from kio.schema.join_group.v7 import request as v7
from kio.schema.join_group.v8 import request as v8
from kio.schema.join_group.v9 import request as v9

__all__ = ("JoinGroupRequestV1Plus", "JoinGroupRequestProtocol", "JoinGroupRequest")

JoinGroupRequestProtocol: TypeAlias = (
    v0.JoinGroupRequestProtocol | v1.JoinGroupRequestProtocol | v2.JoinGroupRequestProtocol
    | v3.JoinGroupRequestProtocol | v4.JoinGroupRequestProtocol | v5.JoinGroupRequestProtocol
    | v6.JoinGroupRequestProtocol | v7.JoinGroupRequestProtocol | v8.JoinGroupRequestProtocol
    | v9.JoinGroupRequestProtocol
)
JoinGroupRequest: TypeAlias = (
    v0.JoinGroupRequest | v1.JoinGroupRequest | v2.JoinGroupRequest | v3.JoinGroupRequest | v4.JoinGroupRequest
    | v5.JoinGroupRequest | v6.JoinGroupRequest | v7.JoinGroupRequest | v8.JoinGroupRequest | v9.JoinGroupRequest
)

# v1+: rebalance_timeout
JoinGroupRequestV1Plus: TypeAlias = (
    v1.JoinGroupRequest
    | v2.JoinGroupRequest
    | v3.JoinGroupRequest
    | v4.JoinGroupRequest
    | v5.JoinGroupRequest
    | v6.JoinGroupRequest
    | v7.JoinGroupRequest
    | v8.JoinGroupRequest
    | v9.JoinGroupRequest
)
