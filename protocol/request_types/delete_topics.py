"""DeleteTopics requests v1-6 as kio reads them, for broker/handlers/delete_topics.py."""

from typing import TypeAlias

from kio.schema.delete_topics.v1 import request as v1
from kio.schema.delete_topics.v2 import request as v2
from kio.schema.delete_topics.v3 import request as v3
from kio.schema.delete_topics.v4 import request as v4
from kio.schema.delete_topics.v5 import request as v5
from kio.schema.delete_topics.v6 import request as v6

__all__ = ("DeleteTopicsRequestV6Plus", "DeleteTopicsRequest", "DeleteTopicState")

DeleteTopicsRequest: TypeAlias = (
    v1.DeleteTopicsRequest | v2.DeleteTopicsRequest | v3.DeleteTopicsRequest | v4.DeleteTopicsRequest
    | v5.DeleteTopicsRequest | v6.DeleteTopicsRequest
)
DeleteTopicState: TypeAlias = v6.DeleteTopicState

# v6+: topics by name or id (DeleteTopicState), not topic_names
DeleteTopicsRequestV6Plus: TypeAlias = v6.DeleteTopicsRequest
