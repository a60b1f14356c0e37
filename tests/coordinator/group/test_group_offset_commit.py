"""Who may commit offsets to a group, and when a group's offsets expire."""

from kio.schema.errors import ErrorCode

from coordinator.group.group_offsets import expired_offsets, validate_offset_commit
from coordinator.group.offsets import OffsetAndMetadata
from coordinator.group.state import GroupState
from storage.api import TopicPartition

from .helpers import SESSION, new_group, params, stable_group

TP = TopicPartition("t", 0)
OTHER = TopicPartition("other", 0)
DAY = 24 * 3600 * 1000


def validate(group, member="", gen=-1, instance=None, txn=False):
    return validate_offset_commit(
        group, member_id=member, group_instance_id=instance, generation_id=gen, transactional=txn
    )


def test_standalone_consumer_commits_to_empty_group() -> None:
    assert validate(new_group()) is None


def test_only_members_commit_to_a_group_with_members() -> None:
    group, (leader, follower) = stable_group("a", "b")
    gen = group.generation_id
    assert validate(group) is ErrorCode.unknown_member_id
    assert validate(group, txn=True) is None  # TxnOffsetCommit < v3 carries no member
    assert validate(group, leader, gen) is None
    assert validate(group, leader, gen - 1) is ErrorCode.illegal_generation
    assert validate(group, leader, gen - 1, txn=True) is ErrorCode.illegal_generation
    assert validate(group, "nobody", gen) is ErrorCode.unknown_member_id
    assert validate(group, "", gen) is ErrorCode.unknown_member_id


def test_commit_with_generation_to_empty_group_is_illegal_generation() -> None:
    group, (leader,) = stable_group("a")
    group.leave([(leader, None)], 0)
    assert validate(group, leader, 1) is ErrorCode.unknown_member_id
    assert validate(group, "", 1) is ErrorCode.unknown_member_id


def test_fenced_static_member_cannot_commit() -> None:
    group = new_group()
    group.join(params(instance="i"), 0, "w")
    old = group.static_members["i"]
    group.join(params(instance="i"), 0, "w2")
    assert validate(group, old, group.generation_id, "i") is ErrorCode.fenced_instance_id
    assert validate(group, old, group.generation_id, "i", txn=True) is ErrorCode.fenced_instance_id


def test_dead_group() -> None:
    group = new_group()
    group.state = GroupState.DEAD
    assert validate(group) is ErrorCode.coordinator_not_available


def test_commit_while_preparing_is_allowed_but_completing_is_rebalance_in_progress() -> None:
    group, (leader, follower) = stable_group("a", "b")
    gen = group.generation_id
    group.join(params(leader, client_id="a"), 0, "wa")
    assert group.state is GroupState.PREPARING_REBALANCE
    assert validate(group, follower, gen) is None
    group.join(params(follower, client_id="b"), 0, "wb")
    assert validate(group, leader, gen + 1) is ErrorCode.rebalance_in_progress
    # TxnOffsetCommit (KIP-447) checks only the member and its generation
    assert validate(group, leader, gen + 1, txn=True) is None


def test_schedule_heartbeat_restarts_the_session() -> None:
    group, (leader,) = stable_group("a")
    group.members[leader].schedule_heartbeat(5_000)
    assert group.members[leader].heartbeat_deadline_ms == 5_000 + SESSION


def _offset(ts: int) -> OffsetAndMetadata:
    return OffsetAndMetadata(committed_offset=1, commit_timestamp=ts)


def test_empty_group_offsets_expire_from_when_it_emptied() -> None:
    group, (leader,) = stable_group("a")
    group.offsets.commit({TP: _offset(0)})
    group.leave([(leader, None)], 10 * DAY)
    retention = group.config.offsets_retention_ms
    assert expired_offsets(group, 10 * DAY + retention - 1) == []
    assert expired_offsets(group, 10 * DAY + retention) == [TP]


def test_stable_consumer_group_expires_only_unsubscribed_topics() -> None:
    group, _ = stable_group("a")
    assert group.subscribed_topics == {"t"}
    group.offsets.commit({TP: _offset(0), OTHER: _offset(0)})
    assert expired_offsets(group, 100 * DAY) == [OTHER]


def test_standalone_offsets_expire_from_commit() -> None:
    group = new_group()
    group.offsets.commit({TP: _offset(DAY)})
    retention = group.config.offsets_retention_ms
    assert expired_offsets(group, DAY + retention - 1) == []
    assert expired_offsets(group, DAY + retention) == [TP]


def test_rebalancing_group_keeps_offsets() -> None:
    group, (leader,) = stable_group("a")
    group.join(params(client_id="b"), 0, "w")
    group.offsets.commit({OTHER: _offset(0)})
    assert expired_offsets(group, 100 * DAY) == []


def test_generation_minus_one_commits_to_an_empty_group_whatever_the_member_id() -> None:
    """As Kafka's ClassicGroup.validateOffsetCommit, which checks generation < 0 and Empty before
    the member: librdkafka's consumer-protocol (KIP-848) consumer that only assign()s commits
    with the member id it generated and epoch -1 (librdkafka's 0099-commit_metadata, 0030)."""
    assert validate(new_group(), "client-generated-id") is None
    assert validate(new_group(), "client-generated-id", instance="i") is None
    group, (leader,) = stable_group("a")
    assert validate(group, "client-generated-id") is ErrorCode.unknown_member_id  # not Empty
    group.leave([(leader, None)], 0)
    assert validate(group, "client-generated-id") is None
