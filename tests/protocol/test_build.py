"""protocol.build: plain values into kio entities, nested lists and single nullable entities."""

from kio.schema.describe_topic_partitions.v0.request import Cursor, DescribeTopicPartitionsRequest
from kio.schema.describe_topic_partitions.v0.response import DescribeTopicPartitionsResponse

from protocol.build import build


def test_single_nullable_entity_is_built_from_a_mapping() -> None:
    req = build(DescribeTopicPartitionsRequest, {"topics": [{"name": "a"}], "response_partition_limit": 5,
                                                 "cursor": {"topic_name": "a", "partition_index": 3}})
    assert req.cursor == Cursor(topic_name="a", partition_index=3)
    assert req.topics[0].name == "a"
    resp = build(DescribeTopicPartitionsResponse, {"topics": [], "next_cursor": None})
    assert resp.next_cursor is None
