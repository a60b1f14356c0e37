"""Classic-protocol members inside a consumer group (classic_members.py), pure: the errors Kafka's
classicGroup*ToConsumerGroup answer, and what a JoinGroup reply holds."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from coordinator.group.classic_members import classic_heartbeat, classic_join, classic_leave, classic_sync
from coordinator.group.consumer_group import ConsumerGroup
from coordinator.group.consumer_heartbeat import ConsumerGroupConfig, HeartbeatRequest, heartbeat
from protocol.errors import KafkaError

from .helpers import params, subscription

T = uuid.UUID(int=7)
TOPICS = {"t": (T, 4)}
CFG = ConsumerGroupConfig()


def group_with_consumer_member() -> ConsumerGroup:
    g = ConsumerGroup("g")
    heartbeat(g, HeartbeatRequest(member_id="c", member_epoch=0, rebalance_timeout_ms=1000,
                                  subscribed_topic_names=("t",), owned={}), TOPICS, CFG, 0)
    return g


def code(fn, *args, **kwargs) -> ErrorCode:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaError) as raised:
        fn(*args, **kwargs)
    return raised.value.code


def test_join_needs_the_consumer_protocol_type_and_a_shared_protocol() -> None:
    g = group_with_consumer_member()
    assert code(classic_join, g, params("m", protocol_type="connect"), TOPICS, CFG, 0) is \
        ErrorCode.inconsistent_group_protocol
    classic_join(g, params("m1", protocols=(("range", subscription("t")),)), TOPICS, CFG, 0)
    assert code(classic_join, g, params("m2", protocols=(("roundrobin", subscription("t")),)), TOPICS, CFG, 0) is \
        ErrorCode.inconsistent_group_protocol


def test_a_new_member_without_an_id_is_asked_for_one_first() -> None:
    g = group_with_consumer_member()
    asked = classic_join(g, params(require_known=True), TOPICS, CFG, 0)
    assert asked.error is ErrorCode.member_id_required and asked.member_id and asked.member_id not in g.members
    joined = classic_join(g, params(asked.member_id, require_known=True), TOPICS, CFG, 0)
    assert joined.error is ErrorCode.none and joined.generation_id == g.members[asked.member_id].member_epoch
    assert (joined.leader_id, joined.members, joined.protocol_type, joined.protocol_name) == (
        "", (), "consumer", "range")


def test_classic_apis_refuse_members_that_are_not_classic_or_unknown() -> None:
    g = group_with_consumer_member()
    assert code(classic_heartbeat, g, member_id="c", generation_id=1, instance_id=None, now_ms=0) is \
        ErrorCode.unknown_member_id
    assert code(classic_heartbeat, g, member_id="x", generation_id=1, instance_id=None, now_ms=0) is \
        ErrorCode.unknown_member_id
    j = classic_join(g, params("m", instance="i"), TOPICS, CFG, 0)
    assert code(classic_sync, g, member_id="other", generation_id=j.generation_id, instance_id="i",
                protocol_type=None, protocol_name=None, names={T: "t"}, now_ms=0) is ErrorCode.fenced_instance_id
    assert code(classic_sync, g, member_id="m", generation_id=j.generation_id, instance_id="i",
                protocol_type="consumer", protocol_name="roundrobin", names={T: "t"}, now_ms=0) is \
        ErrorCode.inconsistent_group_protocol
    assert code(classic_sync, g, member_id="m", generation_id=j.generation_id + 1, instance_id="i",
                protocol_type=None, protocol_name=None, names={T: "t"}, now_ms=0) is ErrorCode.illegal_generation


def test_leave_answers_each_member_and_fences_the_known_ones() -> None:
    g = group_with_consumer_member()
    classic_join(g, params("m"), TOPICS, CFG, 0)
    epoch = g.group_epoch
    errors, gone = classic_leave(g, [("m", None), ("nope", None), ("c", None)])
    assert errors == [ErrorCode.none, ErrorCode.unknown_member_id, ErrorCode.none] and gone == {"m", "c"}
    assert not g.members and g.group_epoch == epoch + 2
