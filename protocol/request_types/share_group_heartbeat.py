"""ShareGroupHeartbeat requests v1-1 as kio reads them, for broker/handlers/share_group_heartbeat.py."""

from typing import TypeAlias

from kio.schema.share_group_heartbeat.v1 import request as v1

__all__ = ("ShareGroupHeartbeatRequest",)

ShareGroupHeartbeatRequest: TypeAlias = v1.ShareGroupHeartbeatRequest
