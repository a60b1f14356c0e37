"""LeaveGroup requests v0-5 as kio reads them, for broker/handlers/leave_group.py."""

from typing import TypeAlias

from kio.schema.leave_group.v0 import request as v0
from kio.schema.leave_group.v1 import request as v1
from kio.schema.leave_group.v2 import request as v2
from kio.schema.leave_group.v3 import request as v3
from kio.schema.leave_group.v4 import request as v4
from kio.schema.leave_group.v5 import request as v5

__all__ = ("LeaveGroupRequestV3Plus", "LeaveGroupRequest", "MemberIdentity")

LeaveGroupRequest: TypeAlias = (
    v0.LeaveGroupRequest | v1.LeaveGroupRequest | v2.LeaveGroupRequest | v3.LeaveGroupRequest | v4.LeaveGroupRequest
    | v5.LeaveGroupRequest
)
MemberIdentity: TypeAlias = v3.MemberIdentity | v4.MemberIdentity | v5.MemberIdentity

# v3+ (KIP-345): a batch of members, not one member_id
LeaveGroupRequestV3Plus: TypeAlias = v3.LeaveGroupRequest | v4.LeaveGroupRequest | v5.LeaveGroupRequest
