"""ConsumerGroupHeartbeat requests v0-1 as kio reads them, for broker/handlers/consumer_group_heartbeat.py."""

from typing import TypeAlias

from kio.schema.consumer_group_heartbeat.v0 import request as v0
from kio.schema.consumer_group_heartbeat.v1 import request as v1

__all__ = ("TopicPartitions", "ConsumerGroupHeartbeatRequest")

TopicPartitions: TypeAlias = v0.TopicPartitions | v1.TopicPartitions
ConsumerGroupHeartbeatRequest: TypeAlias = v0.ConsumerGroupHeartbeatRequest | v1.ConsumerGroupHeartbeatRequest
