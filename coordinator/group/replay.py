"""The group coordinator's replay, as Kafka's GroupCoordinatorShard.replay: a record of
__consumer_offsets applied to the groups. The runtime replays each record a decision wrote
(coordinator/runtime.py: decisions change nothing before), and the loader replays a partition
with it at start-up, so live state and loaded state come from one path.

A committed offset remembers the offset of its record; a TxnOffsetCommit's is held pending under
its producer until replay_end_txn, the marker, applies (COMMIT) or drops (ABORT) it. A group
metadata record replaces the classic group's members and generation, keeping its offsets; its
tombstone removes the group. A consumer-group record makes (or keeps) the group a consumer group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableMapping, Sequence

from .consumer_group import ConsumerGroup
from .consumer_persist import ConsumerRecord, apply_consumer_record
from .log import GroupMetadataValue
from .metadata import GroupMetadata
from .offset_shard import is_removable
from .records import ClassicRecord, GroupRecord, OffsetRecord
from .snapshot import replay_group
from .state import GroupState

__all__ = ("GroupReplay",)


class GroupReplay:
    """Replays records into groups (created as needed); clock: now, for the members' sessions."""

    def __init__(self, groups: MutableMapping[str, GroupMetadata], new_group: Callable[[str], GroupMetadata],
                 clock: Callable[[], int]) -> None:
        self.groups = groups
        self._new_group = new_group
        self._clock = clock

    def begin(self, records: Sequence[GroupRecord]) -> None:
        """Nothing to mark: a decision leaves the groups alone until its records are replayed."""

    def revert(self, records: Sequence[GroupRecord]) -> None:
        """Nothing to drop (begin marked nothing)."""

    def group(self, group_id: str) -> GroupMetadata:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = self._new_group(group_id)
        return group

    def replay(self, record: GroupRecord, offset: int | None = None) -> None:
        """The record, at offset in __consumer_offsets (an offset commit needs it)."""
        match record:
            case OffsetRecord():
                self._replay_offset(record, offset)
            case ClassicRecord(group_id, None):
                self.remove_group(group_id)
            case ClassicRecord(group_id, GroupMetadataValue() as value):
                replay_group(self.group(group_id), value, self._clock())
            case ConsumerRecord(key, value):
                group = self.group(key.group)
                if group.consumer is None:
                    group.consumer = ConsumerGroup(key.group)
                apply_consumer_record(group.consumer, key, value)

    def remove_group(self, group_id: str) -> None:
        """A group tombstone. Offsets it still holds (a transaction's pending ones, whose marker
        comes later) stay with a fresh group, as loading the log has always kept them."""
        old = self.groups.pop(group_id, None)
        if old is None:
            return
        old.state = GroupState.DEAD
        if old.offsets.has_offsets():
            fresh = self.groups[group_id] = self._new_group(group_id)
            fresh.offsets = old.offsets

    def _replay_offset(self, record: OffsetRecord, offset: int | None) -> None:
        group = self.group(record.group_id)
        if record.value is None:
            group.offsets.delete([record.tp])
            return
        assert offset is not None, "a committed offset is replayed at its record's offset"
        value = record.value.at(offset)
        if record.producer is None:
            group.offsets.commit({record.tp: value})
        else:
            group.offsets.add_pending(record.producer.producer_id, {record.tp: value})

    def replay_end_txn(self, producer_id: int, commit: bool, group_ids: Iterable[str]) -> None:
        """The producer's marker is in the log: apply or drop its pending offsets in these groups;
        a group that held only those pending offsets is gone with an abort."""
        for group_id in group_ids:
            group = self.groups.get(group_id)
            if group is None:
                continue
            group.offsets.complete_txn(producer_id, commit)
            if is_removable(group):
                del self.groups[group_id]
