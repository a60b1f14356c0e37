"""The consumer group protocol (KIP-848) inside the GroupCoordinator actor: ConsumerGroupHeartbeat
and ConsumerGroupDescribe, run in the owner task like every other command (see operations.py).

Classic and consumer groups share one table (GroupMetadata.consumer marks the second kind) and
one offset store, so offsets, deletion and expiry work the same for both. A group changes type
the way Kafka's GroupMetadataManager lets it without online migration: an empty classic group
(offsets only) becomes a consumer group on the first consumer heartbeat, and an empty consumer
group becomes a classic group on the first JoinGroup. A group with members of the other protocol
refuses: GROUP_ID_NOT_FOUND ("is not a consumer group") for a heartbeat, INCONSISTENT_GROUP_PROTOCOL
for a JoinGroup. (Kafka's group.consumer.migration.policy upgrade/downgrade, which moves live
members across protocols, is not implemented: the behaviour is that of its `disabled` setting.)

A heartbeat mutates the group in memory, then persists what changed (consumer_log.py); when the
append fails the group is put back as it was and the heartbeat fails with the append's error.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kio.schema.errors import ErrorCode

from protocol.errors import KafkaError

from . import commands as c
from .consumer_group import ConsumerGroup
from .consumer_heartbeat import (
    ConsumerGroupConfig,
    HeartbeatResult,
    Topics,
    expire,
    heartbeat,
    leave,
    subscription_metadata,
    validate,
)
from .consumer_persist import ConsumerGroupDescription, describe_consumer_group, persist_changes
from .metadata import GroupMetadata
from .operations import GroupOperations, append_error

__all__ = ("ConsumerOperations", "group_deadline")

log = logging.getLogger(__name__)


def group_deadline(group: GroupMetadata) -> int | None:
    """The group's next timer of either protocol."""
    deadlines = [group.next_deadline_ms()]
    if group.consumer is not None:
        deadlines.append(group.consumer.next_deadline_ms())
    return min((d for d in deadlines if d is not None), default=None)


class ConsumerOperations(GroupOperations):
    consumer_config = ConsumerGroupConfig()

    def topics_view(self) -> Topics:
        return {name: (meta.topic_id, meta.partitions) for name, meta in self._logs.topics.items()}

    def resume_consumer_groups(self, now: int, groups: Iterable[GroupMetadata] | None = None) -> None:
        """Loaded consumer groups (all, or those of one loaded shard): their members get a fresh
        session, as Kafka schedules one per member on load, and the subscribed topics' metadata is
        taken from the topics now."""
        topics = self.topics_view()
        for group in self.groups.values() if groups is None else groups:
            if group.consumer is not None:
                consumer = group.consumer
                for member_id in consumer.members:
                    consumer.session_deadlines[member_id] = now + self.consumer_config.session_timeout_ms
                consumer.subscription_metadata = subscription_metadata(consumer, topics)

    def _consumer_group(self, group_id: str, *, create: bool) -> GroupMetadata:
        group = self.groups.get(group_id)
        if group is None:
            if not create:
                # Kafka would say GROUP_ID_NOT_FOUND; a member of a group this coordinator does not
                # know (state lost, group deleted) must rejoin, which UNKNOWN_MEMBER_ID tells it.
                raise KafkaError(ErrorCode.unknown_member_id, f"Group {group_id} has no such member.")
            group = self.groups[group_id] = GroupMetadata(group_id, self.config, now_ms=self._clock_ms())
        if group.consumer is None:
            if not (create and group.is_empty() and not group.pending_members):
                raise KafkaError(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.")
            log.info("group %s: now a consumer group (consumer protocol)", group_id)
            group.consumer = ConsumerGroup(group_id)
        return group

    async def do_consumer_heartbeat(self, cmd: c.ConsumerGroupHeartbeat) -> HeartbeatResult | KafkaError:
        """The heartbeat's result, or the error to answer it with (returned, not raised: the
        actor logs what its commands raise as failures)."""
        try:
            return await self._consumer_heartbeat(cmd)
        except KafkaError as exc:
            return exc

    async def _consumer_heartbeat(self, cmd: c.ConsumerGroupHeartbeat) -> HeartbeatResult:
        cfg, req = self.consumer_config, cmd.request
        validate(cmd.group_id, req, cfg)
        group = self._consumer_group(cmd.group_id, create=req.member_epoch == 0)
        consumer = group.consumer
        assert consumer is not None
        before, now = consumer.snapshot(), self._clock_ms()
        try:
            if req.member_epoch < 0:
                result = leave(consumer, req, cfg, now)
            else:
                result = heartbeat(consumer, req, self.topics_view(), cfg, now)
            await persist_changes(self, group, before, now)
        except KafkaError:
            consumer.restore(before)
            raise
        except Exception as exc:
            consumer.restore(before)
            log.warning("could not store consumer group %s: %r", cmd.group_id, exc)
            raise KafkaError(append_error(exc, offsets=False), str(exc)) from exc
        self._log_epochs(group.group_id, consumer, before.group_epoch)
        return result

    @staticmethod
    def _log_epochs(group_id: str, consumer: ConsumerGroup, before: int) -> None:
        if consumer.group_epoch != before:
            log.info("group %s: group epoch %d, %d members, %s", group_id, consumer.group_epoch,
                     len(consumer.members), consumer.state)

    async def expire_consumer_members(self, group: GroupMetadata, now: int) -> list[str]:
        consumer = group.consumer
        if consumer is None:
            return []
        before = consumer.snapshot()
        gone = expire(consumer, self.topics_view(), now)
        if gone:
            try:
                await persist_changes(self, group, before, now)
            except Exception as exc:  # fenced in memory anyway: the next change writes it again
                log.warning("could not store consumer group %s: %r", group.group_id, exc)
            self._log_epochs(group.group_id, consumer, before.group_epoch)
        return gone

    def do_consumer_describe(self, cmd: c.ConsumerGroupDescribe) -> list[ConsumerGroupDescription]:
        names = {meta.topic_id: name for name, meta in self._logs.topics.items()}
        out = []
        for group_id in cmd.group_ids:
            group = self.groups.get(group_id)
            if group is None or group.consumer is None:
                why = "not found" if group is None else "is not a consumer group"
                out.append(ConsumerGroupDescription(group_id=group_id, error=ErrorCode.group_id_not_found,
                                                    error_message=f"Group {group_id} {why}."))
            else:
                out.append(describe_consumer_group(group.consumer, self.consumer_config, names))
        return out
