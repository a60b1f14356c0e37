"""Message schemas Kafka 4.4 added that kio 0.6.5 does not have, as kio-shaped dataclasses so
that kio's generic readers and writers, the bounds walk and dispatch's null check serve them like
kio's own (protocol/codec.py looks here first). Written from Kafka 4.4's message JSON:

- ApiVersions v5 (KIP-1242): the request names the cluster and node the client means to reach;
  the response is v4's.
- DeleteGroups v3: each result gains a nullable ErrorMessage; the request is v2's.
- TxnOffsetCommit v6 (KIP-1319): topics by id instead of by name, both ways.

No `from __future__ import annotations`: kio reads each field's type at run time.

Typing: the classes are made by a decorator from kio-shaped declarations, for any API, so the
decorator's and the tables' class types are dynamic.
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from kio.schema.api_versions.v4.response import ApiVersion, FinalizedFeatureKey, SupportedFeatureKey
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import GroupId, ProducerId, TransactionalId
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i32Timedelta, i64

__all__ = ("NEWER_REQUESTS", "NEWER_RESPONSES")


def _meta(kafka_type: str) -> Any:
    return field(metadata={"kafka_type": kafka_type})


def _schema(kind: EntityType, *, api_key: int, version: int, header: type[Any]) -> Callable[[type[Any]], type[Any]]:
    """A frozen kio entity: the class attributes kio reads (every schema here is flexible)."""
    def make(cls: type[Any]) -> type[Any]:
        cls.__type__, cls.__version__, cls.__flexible__ = kind, i16(version), True
        cls.__api_key__, cls.__header_schema__ = i16(api_key), header
        return dataclass(frozen=True, slots=True, kw_only=True)(cls)
    return make


# -- ApiVersions v5 ---------------------------------------------------------------------------------


@_schema(EntityType.request, api_key=18, version=5, header=RequestHeader)
class ApiVersionsRequestV5:
    client_software_name: str = _meta("string")
    client_software_version: str = _meta("string")
    # Both set, or neither: the cluster and node the client means to reach (null, -1: unknown).
    cluster_id: str | None = field(metadata={"kafka_type": "string"}, default=None)
    node_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))


@_schema(EntityType.response, api_key=18, version=5, header=ResponseHeaderV0)
class ApiVersionsResponseV5:
    error_code: ErrorCode = _meta("error_code")
    api_keys: tuple[ApiVersion, ...]
    throttle_time: i32Timedelta = _meta("timedelta_i32")
    supported_features: tuple[SupportedFeatureKey, ...] = field(metadata={"tag": 0}, default=())
    finalized_features_epoch: i64 = field(metadata={"kafka_type": "int64", "tag": 1}, default=i64(-1))
    finalized_features: tuple[FinalizedFeatureKey, ...] = field(metadata={"tag": 2}, default=())
    zk_migration_ready: bool = field(metadata={"kafka_type": "bool", "tag": 3}, default=False)


# -- DeleteGroups v3 --------------------------------------------------------------------------------


@_schema(EntityType.request, api_key=42, version=3, header=RequestHeader)
class DeleteGroupsRequestV3:
    groups_names: tuple[GroupId, ...] = field(metadata={"kafka_type": "string"}, default=())


@_schema(EntityType.nested, api_key=42, version=3, header=ResponseHeader)
class DeletableGroupResultV3:
    group_id: GroupId = _meta("string")
    error_code: ErrorCode = _meta("error_code")
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)


@_schema(EntityType.response, api_key=42, version=3, header=ResponseHeader)
class DeleteGroupsResponseV3:
    throttle_time: i32Timedelta = _meta("timedelta_i32")
    results: tuple[DeletableGroupResultV3, ...]


# -- TxnOffsetCommit v6 -----------------------------------------------------------------------------


@_schema(EntityType.nested, api_key=28, version=6, header=RequestHeader)
class TxnOffsetCommitRequestPartitionV6:
    partition_index: i32 = _meta("int32")
    committed_offset: i64 = _meta("int64")
    committed_leader_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    committed_metadata: str | None = _meta("string")


@_schema(EntityType.nested, api_key=28, version=6, header=RequestHeader)
class TxnOffsetCommitRequestTopicV6:
    topic_id: uuid.UUID | None = _meta("uuid")
    partitions: tuple[TxnOffsetCommitRequestPartitionV6, ...]


@_schema(EntityType.request, api_key=28, version=6, header=RequestHeader)
class TxnOffsetCommitRequestV6:
    transactional_id: TransactionalId = _meta("string")
    group_id: GroupId = _meta("string")
    producer_id: ProducerId = _meta("int64")
    producer_epoch: i16 = _meta("int16")
    # Kafka calls it GenerationIdOrMemberEpoch from v6; the handler reads both names alike.
    generation_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    member_id: str = field(metadata={"kafka_type": "string"}, default="")
    group_instance_id: str | None = field(metadata={"kafka_type": "string"}, default=None)
    topics: tuple[TxnOffsetCommitRequestTopicV6, ...]


@_schema(EntityType.nested, api_key=28, version=6, header=ResponseHeader)
class TxnOffsetCommitResponsePartitionV6:
    partition_index: i32 = _meta("int32")
    error_code: ErrorCode = _meta("error_code")


@_schema(EntityType.nested, api_key=28, version=6, header=ResponseHeader)
class TxnOffsetCommitResponseTopicV6:
    topic_id: uuid.UUID | None = _meta("uuid")
    partitions: tuple[TxnOffsetCommitResponsePartitionV6, ...]


@_schema(EntityType.response, api_key=28, version=6, header=ResponseHeader)
class TxnOffsetCommitResponseV6:
    throttle_time: i32Timedelta = _meta("timedelta_i32")
    topics: tuple[TxnOffsetCommitResponseTopicV6, ...]


# (api_key, version) -> schema
NEWER_REQUESTS: Final[dict[tuple[int, int], type[Any]]] = {
    (18, 5): ApiVersionsRequestV5,
    (42, 3): DeleteGroupsRequestV3,
    (28, 6): TxnOffsetCommitRequestV6,
}
NEWER_RESPONSES: Final[dict[tuple[int, int], type[Any]]] = {
    (18, 5): ApiVersionsResponseV5,
    (42, 3): DeleteGroupsResponseV3,
    (28, 6): TxnOffsetCommitResponseV6,
}
