"""OffsetShard's decisions on groups with members, which the offset state machine does not build."""

from kio.schema.errors import ErrorCode

from coordinator.group import commands as c
from coordinator.group.config import GroupConfig
from coordinator.group.metadata import GroupMetadata
from coordinator.group.offset_shard import KeepAlive, OffsetShard, answer_of
from coordinator.group.offsets import OffsetAndMetadata
from coordinator.group.records import OffsetRecord
from storage.api import TopicPartition

from .helpers import stable_group

TP = TopicPartition("t", 0)


def _commit(group_id: str, member_id: str = "", generation_id: int = -1) -> c.CommitOffsets:
    reply: c.Reply[dict[TopicPartition, ErrorCode]] = None  # type: ignore[assignment]  # decided only
    return c.CommitOffsets(group_id=group_id, member_id=member_id, generation_id=generation_id,
                           group_instance_id=None, offsets={TP: OffsetAndMetadata(committed_offset=5)},
                           retention_ms=None, reply=reply)


def test_a_members_commit_keeps_its_session_alive_as_an_effect() -> None:
    group, (leader,) = stable_group("a")
    shard = OffsetShard({group.group_id: group}, group.config, lambda topic: None)
    deadline = group.members[leader].heartbeat_deadline_ms
    result = shard.commit(_commit(group.group_id, leader, group.generation_id), 5_000, set())
    assert answer_of(result) == {TP: ErrorCode.none}
    assert [r.tp for r in result.records if isinstance(r, OffsetRecord)] == [TP]
    assert result.effects == (KeepAlive(group.group_id, leader),)
    assert group.members[leader].heartbeat_deadline_ms == deadline, "the decision itself changes nothing"
    assert not group.offsets.committed


def test_a_group_the_batch_creates_is_known_to_the_commits_behind() -> None:
    """The first commit of an unknown group creates it once written; a member commit decided right
    behind it in the same batch is checked against that empty group (UNKNOWN_MEMBER_ID), as when
    the first one had been applied, not told ILLEGAL_GENERATION as for a group nobody made."""
    groups: dict[str, GroupMetadata] = {}
    shard = OffsetShard(groups, GroupConfig(), lambda topic: None)
    created: set[str] = set()
    assert answer_of(shard.commit(_commit("new"), 0, created)) == {TP: ErrorCode.none}
    assert created == {"new"} and not groups
    assert answer_of(shard.commit(_commit("new", "m", 3), 0, created)) == {TP: ErrorCode.unknown_member_id}
    assert answer_of(shard.commit(_commit("other", "m", 3), 0, created)) == {TP: ErrorCode.illegal_generation}
