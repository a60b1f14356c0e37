"""DescribeProducers requests v0-0 as kio reads them, for broker/handlers/describe_producers.py."""

from typing import TypeAlias

from kio.schema.describe_producers.v0 import request as v0

__all__ = ("TopicRequest", "DescribeProducersRequest")

TopicRequest: TypeAlias = v0.TopicRequest
DescribeProducersRequest: TypeAlias = v0.DescribeProducersRequest
