"""CreateTopics requests v2-7 as kio reads them, for broker/handlers/create_topics.py."""

from typing import TypeAlias

from kio.schema.create_topics.v2 import request as v2
from kio.schema.create_topics.v3 import request as v3
from kio.schema.create_topics.v4 import request as v4
from kio.schema.create_topics.v5 import request as v5
from kio.schema.create_topics.v6 import request as v6
from kio.schema.create_topics.v7 import request as v7

__all__ = ("CreatableReplicaAssignment", "CreatableTopicConfig", "CreatableTopic", "CreateTopicsRequest")

CreatableReplicaAssignment: TypeAlias = (
    v2.CreatableReplicaAssignment | v3.CreatableReplicaAssignment | v4.CreatableReplicaAssignment
    | v5.CreatableReplicaAssignment | v6.CreatableReplicaAssignment | v7.CreatableReplicaAssignment
)
CreatableTopicConfig: TypeAlias = (
    v2.CreatableTopicConfig | v3.CreatableTopicConfig | v4.CreatableTopicConfig | v5.CreatableTopicConfig
    | v6.CreatableTopicConfig | v7.CreatableTopicConfig
)
CreatableTopic: TypeAlias = (
    v2.CreatableTopic | v3.CreatableTopic | v4.CreatableTopic | v5.CreatableTopic | v6.CreatableTopic
    | v7.CreatableTopic
)
CreateTopicsRequest: TypeAlias = (
    v2.CreateTopicsRequest | v3.CreateTopicsRequest | v4.CreateTopicsRequest | v5.CreateTopicsRequest
    | v6.CreateTopicsRequest | v7.CreateTopicsRequest
)
