"""The admin side of the GroupCoordinator actor: DescribeGroups, ListGroups, DeleteGroups and
OffsetDelete, run inside the owner task like every other command (see operations.py)."""

from __future__ import annotations

import logging

from kio.schema.errors import ErrorCode

from . import commands as c
from .consumer_group import ConsumerGroupState
from .metadata import CONSUMER_PROTOCOL_TYPE
from .offset_deletion import DeleteOffsetsAnswer, delete_group, delete_offsets, offsets_of_topics
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
        answers = {}
        for group_id in cmd.group_ids:
            try:
                answers[group_id] = await self.runtime.apply(self.replay, delete_group(self.groups.get(group_id)))
            except Exception as exc:
                answers[group_id] = append_error(exc, offsets=False)
        return answers

    async def do_delete_offsets(self, cmd: c.DeleteOffsets) -> DeleteOffsetsAnswer:
        try:
            return await self.runtime.apply(self.replay, delete_offsets(self.groups.get(cmd.group_id), cmd.partitions))
        except Exception as exc:
            return append_error(exc, offsets=False), {}

    async def do_topics_deleted(self, cmd: c.TopicsDeleted) -> int:
        removed = 0
        for group in list(self.groups.values()):
            records = offsets_of_topics(group, cmd.topics)
            if not records:
                continue
            try:
                await self.persist(records)
            except Exception as exc:  # the offsets stay; the next deletion or expiry retries
                log.warning("could not drop offsets of deleted topics in %s: %r", group.group_id, exc)
                continue
            removed += len(records)
            self._maybe_forget(group)
        return removed
