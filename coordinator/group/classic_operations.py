"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup inside the GroupCoordinator actor when the group
is a consumer group with members: its classic-protocol members (classic_members.py) are answered
from the consumer group, as Kafka's GroupMetadataManager routes them. Kafka 4.4 (checked on a
single node) accepts such a JoinGroup under every group.consumer.migration.policy but `disabled`,
which answers INCONSISTENT_GROUP_PROTOCOL. Every other case goes to the classic group
(operations.py).
"""

from __future__ import annotations

import logging

from kio.schema.errors import ErrorCode

from protocol.errors import KafkaError

from . import commands as c
from .classic_members import classic_heartbeat, classic_join, classic_leave, classic_sync
from .consumer_operations import ConsumerOperations
from .member import JoinGroupResult, SyncGroupResult
from .metadata import GroupMetadata
from .operations import append_error

__all__ = ("ClassicInConsumerOperations",)

log = logging.getLogger(__name__)


class ClassicInConsumerOperations(ConsumerOperations):
    def _live_consumer_group(self, group_id: str) -> GroupMetadata | None:
        group = self.groups.get(group_id)
        return group if group is not None and group.consumer is not None and group.consumer.members else None

    async def do_join(self, cmd: c.JoinGroup) -> None:
        group, params = self._live_consumer_group(cmd.group_id), cmd.params
        if group is None:
            await super().do_join(cmd)
            return
        cfg = self.config
        if not cfg.min_session_timeout_ms <= params.session_timeout_ms <= cfg.max_session_timeout_ms:
            cmd.reply.set_result(JoinGroupResult(member_id=params.member_id, error=ErrorCode.invalid_session_timeout))
            return
        if self.consumer_config.migration_policy == "disabled":
            cmd.reply.set_result(JoinGroupResult(member_id=params.member_id,
                                                 error=ErrorCode.inconsistent_group_protocol))
            return
        consumer = group.consumer
        assert consumer is not None
        now, topics, cfg_consumer = self._clock_ms(), self.topics_view(), self.consumer_config
        try:
            result = await self.change_consumer(
                group, consumer, lambda g: classic_join(g, params, topics, cfg_consumer, now), now)
        except KafkaError as exc:
            result = JoinGroupResult(member_id=params.member_id, error=exc.code)
        cmd.reply.set_result(result)

    async def do_sync(self, cmd: c.SyncGroup) -> None:
        group = self._live_consumer_group(cmd.group_id)
        if group is None:
            await super().do_sync(cmd)
            return
        assert group.consumer is not None
        names = {meta.topic_id: name for name, meta in self._logs.topics.items()}
        try:
            p = cmd.params
            result = classic_sync(group.consumer, member_id=p.member_id, generation_id=p.generation_id,
                                  instance_id=p.group_instance_id, protocol_type=p.protocol_type,
                                  protocol_name=p.protocol_name, names=names, now_ms=self._clock_ms())
        except KafkaError as exc:
            result = SyncGroupResult(error=exc.code)
        cmd.reply.set_result(result)

    def do_heartbeat(self, cmd: c.Heartbeat) -> ErrorCode:
        group = self._live_consumer_group(cmd.group_id)
        if group is None:
            return super().do_heartbeat(cmd)
        assert group.consumer is not None
        try:
            classic_heartbeat(group.consumer, member_id=cmd.member_id, generation_id=cmd.generation_id,
                              instance_id=cmd.group_instance_id, now_ms=self._clock_ms())
        except KafkaError as exc:
            return exc.code
        return ErrorCode.none

    async def do_leave(self, cmd: c.LeaveGroup) -> None:
        group = self._live_consumer_group(cmd.group_id)
        if group is None:
            await super().do_leave(cmd)
            return
        consumer = group.consumer
        assert consumer is not None
        try:
            errors, gone = await self.change_consumer(group, consumer, lambda g: classic_leave(g, cmd.members),
                                                      self._clock_ms())
        except KafkaError as exc:  # the write failed (classic_leave refuses per member)
            cmd.reply.set_result((append_error(exc, offsets=False), []))
            return
        if gone:
            log.info("group %s: %s left through LeaveGroup", cmd.group_id, sorted(gone))
        cmd.reply.set_result((ErrorCode.none, errors))
