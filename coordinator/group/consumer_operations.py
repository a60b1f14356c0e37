"""The consumer group protocol (KIP-848) inside the GroupCoordinator actor: ConsumerGroupHeartbeat
and ConsumerGroupDescribe, run in the owner task like every other command (see operations.py).

Classic and consumer groups share one table (GroupMetadata.consumer marks the second kind) and
one offset store, so offsets, deletion and expiry work the same for both. A group changes type
as Kafka's GroupMetadataManager lets it (migration.py): an empty classic group (offsets only)
becomes a consumer group on the first consumer heartbeat, and an empty consumer group a classic
group on the first JoinGroup; under group.consumer.migration.policy a classic group with members
is upgraded by a consumer heartbeat (else GROUP_ID_NOT_FOUND, Kafka's refusal), and a consumer
group whose last consumer-protocol member leaves is downgraded back to a classic group.

A heartbeat, a leave and a timeout are decided without changing the group (consumer_shard.py);
the runtime appends the decision's records, then replays them into the group (replay.py); when the
append fails nothing changed and the heartbeat fails with the append's error. A conversion is one
write too: the old type's tombstones and the new type's records, whose replay converts the group.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from kio.schema.errors import ErrorCode

from protocol.errors import KafkaError

from ..runtime import ApiError, CoordinatorResult
from . import classic_shard
from . import commands as c
from .classic_shard import Reply
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
from .consumer_member import MemberState
from .consumer_persist import (
    ConsumerGroupDescription,
    all_tombstones,
    describe_consumer_group,
)
from .consumer_shard import ConsumerResult, created, decide, fenced, postpone, preview
from .member import JoinGroupResult, SyncGroupResult
from .metadata import GroupMetadata
from .migration import check_upgrade, classic_value, downgrade_allowed, to_consumer_group
from .operations import GroupOperations, append_error
from .records import ClassicRecord

__all__ = ("ConsumerOperations", "group_deadline")

log = logging.getLogger(__name__)

T = TypeVar("T")
# Kafka's coordinator timer retries an operation whose write failed after this long.
RETRY_BACKOFF_MS = 500


def group_deadline(group: GroupMetadata) -> int | None:
    """The group's next timer of either protocol."""
    deadlines = [group.next_deadline_ms()]
    if group.consumer is not None:
        deadlines.append(group.consumer.next_deadline_ms())
    return min((d for d in deadlines if d is not None), default=None)


class ConsumerOperations(GroupOperations):
    consumer_config = ConsumerGroupConfig()
    # group id -> the group's own session timeout / heartbeat interval (Kafka's group configs,
    # set by the broker: consumer.session.timeout.ms -> session_timeout_ms ...), read per heartbeat
    group_overrides: Callable[[str], Mapping[str, int]] | None = None

    def consumer_config_for(self, group_id: str) -> ConsumerGroupConfig:
        own = self.group_overrides(group_id) if self.group_overrides is not None else None
        if not own:
            return self.consumer_config
        base = self.consumer_config
        return dataclasses.replace(base, session_timeout_ms=own.get("session_timeout_ms", base.session_timeout_ms),
                                   heartbeat_interval_ms=own.get("heartbeat_interval_ms", base.heartbeat_interval_ms))

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
                for member_id, member in consumer.members.items():
                    session = self.consumer_config_for(group.group_id).session_timeout_ms if member.classic is None \
                        else member.classic.session_timeout_ms
                    consumer.session_deadlines[member_id] = now + session
                    # Kafka's onLoaded: a member that was revoking gets its rebalance timeout
                    # again, so one that never comes back is fenced and the others proceed.
                    if member.state is MemberState.UNREVOKED_PARTITIONS:
                        consumer.rebalance_deadlines[member_id] = (now + max(member.rebalance_timeout_ms, 0),
                                                                   member.member_epoch)
                consumer.subscription_metadata = subscription_metadata(consumer, topics)

    async def _consumer_group(self, group_id: str, *, create: bool) -> tuple[GroupMetadata, ConsumerGroup]:
        """The group and its consumer group to decide on; a new one (or an empty classic group
        becoming one) is only installed once its first records are written (_adopt)."""
        group = self.groups.get(group_id)
        if group is None:
            if not create:
                # Kafka would say GROUP_ID_NOT_FOUND; a member of a group this coordinator does not
                # know (state lost, group deleted) must rejoin, which UNKNOWN_MEMBER_ID tells it.
                raise KafkaError(ErrorCode.unknown_member_id, f"Group {group_id} has no such member.")
            group = GroupMetadata(group_id, self.config, now_ms=self._clock_ms())
        if group.consumer is None:
            if not create:
                raise KafkaError(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.")
            if not (group.is_empty() and not group.pending_members):
                check_upgrade(group, self.consumer_config)
                group = await self._upgrade(group)
                assert group.consumer is not None
                return group, group.consumer
            return group, ConsumerGroup(group_id)
        return group, group.consumer

    async def _upgrade(self, group: GroupMetadata) -> GroupMetadata:
        """Convert a classic group with members: one write (the classic record's tombstone and the
        consumer group's records), whose replay replaces the group, keeping its offsets; then its
        parked requests are told to rejoin."""
        topics, now, gid = self.topics_view(), self._clock_ms(), group.group_id
        built = to_consumer_group(group, topics)
        built.subscription_metadata = subscription_metadata(built, topics)
        for mid, member in built.members.items():
            assert member.classic is not None
            built.session_deadlines[mid] = now + member.classic.session_timeout_ms
        result = created(built)
        rejoin = ErrorCode.rebalance_in_progress
        replies = [Reply(m.join_waiter, JoinGroupResult(member_id=m.member_id, error=rejoin))
                   for m in group.members.values() if m.join_waiter is not None]
        replies += [Reply(m.sync_waiter, SyncGroupResult(error=rejoin))
                    for m in group.members.values() if m.sync_waiter is not None]
        try:
            await self.runtime.apply(self.replay, CoordinatorResult(
                response=None, records=(ClassicRecord(gid), *result.records), effects=(*result.effects, *replies)))
        except Exception as exc:
            log.warning("could not upgrade group %s: %r", gid, exc)
            raise KafkaError(append_error(exc, offsets=False), str(exc)) from exc
        log.info("group %s: converted the classic group (generation %d, %d members) to a consumer group",
                 gid, group.generation_id, len(built.members))
        return self.groups[gid]

    async def change_consumer(self, group: GroupMetadata, consumer: ConsumerGroup,
                              change: Callable[[ConsumerGroup], T], now: int) -> T:
        """Decide `change` on the consumer group, write its records, then replay them; raises
        KafkaError when the decision refuses or the write fails (then nothing changed)."""
        result = decide(consumer, change)
        if isinstance(result.response, ApiError):
            raise result.response.exception()
        try:
            await self._persist_consumer(group, consumer, result, now)
        except Exception as exc:  # the log's errors answered as Kafka's coordinator does
            log.warning("could not store consumer group %s: %r", group.group_id, exc)
            raise KafkaError(append_error(exc, offsets=False), str(exc)) from exc
        return result.response

    async def _persist_consumer(self, group: GroupMetadata, consumer: ConsumerGroup,
                                result: ConsumerResult[T], now: int) -> None:
        """Write the result and replay it into the group, installed for that (and taken out
        again if the write fails); when it fences members and only classic members remain, the
        group goes back to the classic protocol instead (Kafka's downgrade on member removal)."""
        if fenced(result):
            after = preview(consumer, result)
            if downgrade_allowed(after, set(), self.consumer_config, self.config):
                await self._downgrade(group, consumer, after, now)
                return
        gid, previous, new = group.group_id, group.consumer, group.group_id not in self.groups
        self.groups[gid], group.consumer = group, consumer
        try:
            await self.runtime.apply(self.replay, result)
        except BaseException:
            group.consumer = previous
            if new:
                del self.groups[gid]
            raise
        if previous is not consumer:
            log.info("group %s: now a consumer group (consumer protocol)", gid)

    async def _downgrade(self, group: GroupMetadata, before: ConsumerGroup, after: ConsumerGroup, now: int) -> None:
        """One write: the consumer group's tombstones and the classic group's record, whose replay
        makes the group classic again (its offsets stay); then it rebalances."""
        gid = group.group_id
        names = {meta.topic_id: name for name, meta in self._logs.topics.items()}
        value = classic_value(after, names, before.group_epoch, now)
        gone = all_tombstones(after, [*before.members, *after.members])
        await self.runtime.apply(self.replay, CoordinatorResult(
            response=None, records=(*gone, ClassicRecord(gid, value))))
        log.info("group %s: converted the consumer group (epoch %d, %d classic members) to a classic group",
                 gid, after.group_epoch, len(group.members))
        await self.run_classic(group, classic_shard.rebalance(group, now), now)

    async def do_consumer_heartbeat(self, cmd: c.ConsumerGroupHeartbeat) -> HeartbeatResult | ApiError:
        """The heartbeat's result, or the error to answer it with (a value, not raised: the
        actor logs what its commands raise as failures)."""
        try:
            return await self._consumer_heartbeat(cmd)
        except KafkaError as exc:
            return ApiError.of(exc)

    async def _consumer_heartbeat(self, cmd: c.ConsumerGroupHeartbeat) -> HeartbeatResult:
        cfg, req = self.consumer_config_for(cmd.group_id), cmd.request
        validate(cmd.group_id, req, cfg)
        group, consumer = await self._consumer_group(cmd.group_id, create=req.member_epoch == 0)
        now, epoch, topics = self._clock_ms(), consumer.group_epoch, self.topics_view()
        result = await self.change_consumer(
            group, consumer, (lambda g: leave(g, req, cfg, now)) if req.member_epoch < 0
            else (lambda g: heartbeat(g, req, topics, cfg, now)), now)
        if group.consumer is consumer:  # else downgraded: _downgrade logged it
            self._log_epochs(group.group_id, consumer, epoch)
        return result

    @staticmethod
    def _log_epochs(group_id: str, consumer: ConsumerGroup, before: int) -> None:
        if consumer.group_epoch != before:
            log.info("group %s: group epoch %d, %d members, %s", group_id, consumer.group_epoch,
                     len(consumer.members), consumer.state)

    async def expire_consumer_members(self, group: GroupMetadata, now: int) -> list[str]:
        """Fence the members whose session or rebalance timeout passed; their ids once written."""
        consumer = group.consumer
        if consumer is None:
            return []
        epoch, topics = consumer.group_epoch, self.topics_view()
        try:
            gone = await self.change_consumer(group, consumer, lambda g: expire(g, topics, now), now)
        except KafkaError as exc:  # nothing fenced: tried again after Kafka's timer retry backoff
            log.warning("could not fence expired members of consumer group %s: %s", group.group_id, exc)
            postpone(consumer, now, now + RETRY_BACKOFF_MS)
            return []
        if gone and group.consumer is consumer:
            self._log_epochs(group.group_id, consumer, epoch)
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
