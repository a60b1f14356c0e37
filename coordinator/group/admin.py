"""The admin side of the GroupCoordinator actor: DescribeGroups, ListGroups, DeleteGroups and
OffsetDelete, run inside the owner task like every other command (see operations.py)."""

from __future__ import annotations

import logging

from kio.schema.errors import ErrorCode

from storage.api import TopicPartition

from . import commands as c
from .consumer_group import ConsumerGroupState
from .metadata import CONSUMER_PROTOCOL_TYPE
from .operations import GroupOperations, append_error
from .snapshot import GroupSummary, describe
from .state import GroupState

__all__ = ("AdminOperations",)

log = logging.getLogger(__name__)


class AdminOperations(GroupOperations):
    def do_describe(self, cmd: c.DescribeGroups) -> list[GroupSummary]:
        out = []
        for group_id in cmd.group_ids:
            group = self.groups.get(group_id)
            if group is None:
                out.append(GroupSummary(group_id=group_id, state=GroupState.DEAD, protocol_type="",
                                        protocol="", members=(), error=ErrorCode.group_id_not_found,
                                        error_message=f"Group {group_id} not found."))
            elif group.consumer is not None:
                out.append(GroupSummary(group_id=group_id, state=GroupState.DEAD, protocol_type="",
                                        protocol="", members=(), error=ErrorCode.group_id_not_found,
                                        error_message=f"Group {group_id} is not a classic group."))
            else:
                out.append(describe(group))
        return out

    def do_list(self, cmd: c.ListGroups) -> list[tuple[str, str, GroupState | ConsumerGroupState]]:
        """(group id, protocol type, state); a consumer group's state is a ConsumerGroupState
        (which is how callers tell its type) and its protocol type "consumer", as Kafka lists it."""
        wanted = {s.lower() for s in cmd.states}
        out: list[tuple[str, str, GroupState | ConsumerGroupState]] = []
        for g in self.groups.values():
            if g.consumer is not None:
                out.append((g.group_id, CONSUMER_PROTOCOL_TYPE, g.consumer.state))
            elif g.state is not GroupState.DEAD:
                out.append((g.group_id, g.protocol_type or "", g.state))
        return [entry for entry in out if not wanted or entry[2].value.lower() in wanted]

    async def do_delete_groups(self, cmd: c.DeleteGroups) -> dict[str, ErrorCode]:
        now = self._clock_ms()
        result = {}
        for group_id in cmd.group_ids:
            group = self.groups.get(group_id)
            if group is None or group.state is GroupState.DEAD:
                result[group_id] = ErrorCode.group_id_not_found
            elif not group.is_empty():
                result[group_id] = ErrorCode.non_empty_group
            else:
                try:
                    await self.write_tombstones(
                        group, list(group.offsets.committed), group_too=True, now=now
                    )
                except Exception as exc:
                    result[group_id] = append_error(exc, offsets=False)
                    continue
                group.state = GroupState.DEAD
                del self.groups[group_id]
                result[group_id] = ErrorCode.none
        return result

    async def do_delete_offsets(
        self, cmd: c.DeleteOffsets
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        group = self.groups.get(cmd.group_id)
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.group_id_not_found, {}
        consumer = group.consumer
        if group.state is not GroupState.EMPTY and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return ErrorCode.non_empty_group, {}
        result, deletable = {}, []
        for tp in cmd.partitions:
            if consumer is not None:
                subscribed = tp.topic in consumer.subscribed_topic_names()
            else:
                subscribed = group.subscribed_topics is None or tp.topic in group.subscribed_topics
            if not group.is_empty() and subscribed:
                result[tp] = ErrorCode.group_subscribed_to_topic
            else:
                result[tp] = ErrorCode.none
                if group.offsets.get(tp) is not None:
                    deletable.append(tp)
        try:
            await self.write_tombstones(group, deletable, group_too=False, now=self._clock_ms())
        except Exception as exc:
            return append_error(exc, offsets=False), {}
        group.offsets.delete(deletable)
        return ErrorCode.none, result

    async def do_topics_deleted(self, cmd: c.TopicsDeleted) -> int:
        now, removed = self._clock_ms(), 0
        for group in list(self.groups.values()):
            gone = [tp for tp in group.offsets.committed if tp.topic in cmd.topics]
            if not gone:
                continue
            try:
                await self.write_tombstones(group, gone, group_too=False, now=now)
            except Exception as exc:  # the offsets stay; the next deletion or expiry retries
                log.warning("could not drop offsets of deleted topics in %s: %r", group.group_id, exc)
                continue
            group.offsets.delete(gone)
            removed += len(gone)
            self._maybe_forget(group)
        return removed
