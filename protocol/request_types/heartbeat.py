"""Heartbeat requests v0-4 as kio reads them, for broker/handlers/heartbeat.py."""

from typing import TypeAlias

from kio.schema.heartbeat.v0 import request as v0
from kio.schema.heartbeat.v1 import request as v1
from kio.schema.heartbeat.v2 import request as v2
from kio.schema.heartbeat.v3 import request as v3
from kio.schema.heartbeat.v4 import request as v4

__all__ = ("HeartbeatRequest",)

HeartbeatRequest: TypeAlias = (
    v0.HeartbeatRequest | v1.HeartbeatRequest | v2.HeartbeatRequest | v3.HeartbeatRequest | v4.HeartbeatRequest
)
