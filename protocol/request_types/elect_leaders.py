"""ElectLeaders requests v0-2 as kio reads them, for broker/handlers/elect_leaders.py."""

from typing import TypeAlias

from kio.schema.elect_leaders.v0 import request as v0
from kio.schema.elect_leaders.v1 import request as v1
from kio.schema.elect_leaders.v2 import request as v2

__all__ = ("TopicPartitions", "ElectLeadersRequest")

TopicPartitions: TypeAlias = v0.TopicPartitions | v1.TopicPartitions | v2.TopicPartitions
ElectLeadersRequest: TypeAlias = v0.ElectLeadersRequest | v1.ElectLeadersRequest | v2.ElectLeadersRequest
