"""DescribeTopicPartitions requests v0-0 as kio reads them, for broker/handlers/describe_topic_partitions.py."""

from typing import TypeAlias

from kio.schema.describe_topic_partitions.v0 import request as v0

__all__ = ("TopicRequest", "Cursor", "DescribeTopicPartitionsRequest")

TopicRequest: TypeAlias = v0.TopicRequest
Cursor: TypeAlias = v0.Cursor
DescribeTopicPartitionsRequest: TypeAlias = v0.DescribeTopicPartitionsRequest
