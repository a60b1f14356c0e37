"""protocol.build: plain values into kio entities, nested lists and single nullable entities."""

import pytest
from kio.schema.create_topics.v7.request import CreateTopicsRequest
from kio.schema.describe_topic_partitions.v0.request import Cursor, DescribeTopicPartitionsRequest
from kio.schema.describe_topic_partitions.v0.response import DescribeTopicPartitionsResponse
from kio.schema.find_coordinator.v4.response import FindCoordinatorResponse as FindCoordinatorResponseV4
from kio.schema.join_group.v9.response import JoinGroupResponse as JoinGroupResponseV9
from kio.schema.metadata.v0.response import MetadataResponse as MetadataResponseV0
from kio.schema.metadata.v12.response import MetadataResponse as MetadataResponseV12

from protocol.build import MissingFieldError, UnknownFieldError, build, known_fields
from protocol.errors import ErrorCode
from protocol.newer_schemas import TxnOffsetCommitResponseTopicV6


def test_single_nullable_entity_is_built_from_a_mapping() -> None:
    req = build(DescribeTopicPartitionsRequest, {"topics": [{"name": "a"}], "response_partition_limit": 5,
                                                 "cursor": {"topic_name": "a", "partition_index": 3}})
    assert req.cursor == Cursor(topic_name="a", partition_index=3)
    assert req.topics[0].name == "a"
    resp = build(DescribeTopicPartitionsResponse, {"topics": [], "next_cursor": None})
    assert resp.next_cursor is None


def test_a_misspelt_field_fails_instead_of_answering_its_default() -> None:
    # "eror_code" left alone would answer error_code 0: a success the handler never meant.
    with pytest.raises(UnknownFieldError, match=r"MetadataResponseTopic has no field 'eror_code'"):
        build(MetadataResponseV12, {"throttle_time": 0, "brokers": [], "cluster_id": None, "controller_id": 1,
                                    "topics": [{"name": "a", "topic_id": None, "eror_code": 3}]})
    with pytest.raises(UnknownFieldError, match=r"'timeout_ms'"):
        build(CreateTopicsRequest, {"topics": [], "timeout_ms": 30_000})


def test_a_field_of_another_version_is_dropped_not_refused() -> None:
    # Handlers describe a response once; v0 has no throttle_time, cluster_id or is_internal.
    resp = build(MetadataResponseV0, {"throttle_time": 0, "brokers": [], "cluster_id": "c", "controller_id": 1,
                                      "topics": [{"name": "a", "error_code": 3, "is_internal": True}]})
    assert resp.topics[0].error_code == ErrorCode.unknown_topic_or_partition
    assert resp.topics[0].name == "a"


def test_protocol_newer_schemas_share_the_names_of_kios_versions() -> None:
    # TxnOffsetCommit v6 names topics by id; the handler gives name and id alike for every version.
    assert known_fields(TxnOffsetCommitResponseTopicV6) == {"name", "topic_id", "partitions"}
    resp = build(TxnOffsetCommitResponseTopicV6, {"name": "t", "topic_id": None, "partitions": []})
    assert resp.partitions == ()
    with pytest.raises(UnknownFieldError):
        build(TxnOffsetCommitResponseTopicV6, {"topic": "t", "partitions": []})


def _refuse(cls: type, absent: frozenset[str]) -> None:
    raise MissingFieldError(f"{cls.__name__}: {sorted(absent)}")


def test_a_success_answer_missing_a_field_fails() -> None:
    # A JoinGroup success that forgot its leader would tell every member it is not the leader.
    joined = {"generation_id": 3, "protocol_type": "consumer", "protocol_name": "range", "member_id": "m-1",
              "members": [{"member_id": "m-1", "metadata": b""}]}
    with pytest.raises(MissingFieldError, match=r"JoinGroupResponse: \['leader'\]"):
        build(JoinGroupResponseV9, joined, _refuse)
    # Nested entities are checked too: a member without its metadata.
    with pytest.raises(MissingFieldError, match=r"JoinGroupResponseMember: \['metadata'\]"):
        build(JoinGroupResponseV9, joined | {"leader": "m-1", "members": [{"member_id": "m-1"}]}, _refuse)
    # error_code, error_message ("0"/"null if there was no error") and throttle_time may be left out.
    answer = build(JoinGroupResponseV9, joined | {"leader": "m-1"}, _refuse)
    assert (answer.error_code, answer.leader, answer.throttle_time.total_seconds()) == (ErrorCode.none, "m-1", 0)


def test_an_error_answer_may_leave_fields_at_their_defaults() -> None:
    # As Kafka's group coordinator answers: new JoinGroupResponseData().setMemberId(..).setErrorCode(..).
    answer = build(JoinGroupResponseV9, {"error_code": ErrorCode.unknown_member_id, "member_id": ""}, _refuse)
    assert (answer.leader, answer.protocol_name, answer.members) == ("", None, ())
    # Per entity: an erroring coordinator item needs no host, a successful one does.
    failed = {"key": "g", "error_code": ErrorCode.coordinator_not_available}
    assert build(FindCoordinatorResponseV4, {"coordinators": [failed]}, _refuse).coordinators[0].port == 0
    with pytest.raises(MissingFieldError, match=r"Coordinator: \['host', 'port'\]"):
        build(FindCoordinatorResponseV4, {"coordinators": [failed, {"key": "h", "node_id": 1}]}, _refuse)


def test_requests_and_unchecked_builds_take_the_defaults() -> None:
    # No `missing` policy (requests, broker/error_response.py's whole-request errors): nothing is required.
    assert build(JoinGroupResponseV9, {}).member_id == ""
    assert build(CreateTopicsRequest, {"topics": []}).validate_only is False
