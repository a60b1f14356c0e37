"""What the group coordinator's actor runs, one message at a time (coordinator/runtime.py owns
the loop): each command, the OffsetCommits queued together (one append per __consumer_offsets
partition), and the timer's messages -- a group's session, rebalance or sync deadline, and the
offset-retention check. A command about a group whose shard is not loaded here is refused before
it runs; after each, the group's timer is set to its next deadline.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import assert_never

from protocol.errors import KafkaError

from . import classic_shard
from . import commands as c
from .classic_operations import ClassicInConsumerOperations
from .consumer_operations import group_deadline
from .offset_deletion import expire
from .sharding import ShardedGroups

__all__ = ("RETENTION", "GroupActor", "is_offset_commit")

log = logging.getLogger(__name__)


def is_offset_commit(message: c.GroupMessage) -> bool:
    """An OffsetCommit: TxnOffsetCommits are written as their producer's batches, one each."""
    return type(message) is c.CommitOffsets and message.producer is None


RETENTION = "offsets retention"  # the timer key of the retention check


class GroupActor(ClassicInConsumerOperations, ShardedGroups):

    async def _run_message(self, message: c.GroupMessage) -> None:
        match message:
            case c.GroupDeadline(group_id):
                await self._on_deadline(group_id)
            case c.RetentionCheck():
                now = self._clock_ms()
                self.runtime.timer.schedule(RETENTION, now + self.config.offsets_retention_check_interval_ms,
                                            c.RetentionCheck())
                await self._expire_offsets(now)
            case _:
                await self._serve(message)

    def _admit(self, cmd: c.Command) -> bool:
        """Whether to serve cmd here: not given up on, and its group's shard is loaded here."""
        if cmd.reply.done():
            return False
        if error := self.shard_error(cmd):
            cmd.reply.set_exception(error)  # a group of a shard served elsewhere, or loading
            return False
        return True

    async def _serve(self, cmd: c.Command) -> None:
        if not self._admit(cmd):
            return
        try:
            await self._execute(cmd)
        except Exception as exc:
            log.exception("group coordinator failed on %s", type(cmd).__name__)
            if not cmd.reply.done():
                cmd.reply.set_exception(exc)
        group_id = c.group_id_of(cmd)
        if group_id is not None:
            self._schedule(group_id)

    async def _serve_commits(self, cmds: Sequence[c.GroupMessage]) -> None:
        commits = [cmd for cmd in cmds if isinstance(cmd, c.CommitOffsets) and self._admit(cmd)]
        try:
            results = await self.do_commits(commits)
        except Exception as exc:
            log.exception("group coordinator failed on %d CommitOffsets", len(commits))
            for cmd in commits:
                if not cmd.reply.done():
                    cmd.reply.set_exception(exc)
        else:
            for cmd, result in zip(commits, results, strict=True):
                if not cmd.reply.done():
                    cmd.reply.set_result(result)
        for cmd in commits:
            self._schedule(cmd.group_id)

    def _schedule(self, group_id: str) -> None:
        """Set the group's timer to its next deadline (replacing the one before), or cancel it."""
        group = self.groups.get(group_id)
        deadline = None if group is None else group_deadline(group)
        if deadline is None:
            self.runtime.timer.cancel(("group", group_id))
        else:
            self.runtime.timer.schedule(("group", group_id), deadline, c.GroupDeadline(group_id))

    async def _on_deadline(self, group_id: str) -> None:
        now = self._clock_ms()
        group = self.groups.get(group_id)
        deadline = None if group is None else group_deadline(group)
        if group is None or deadline is None or deadline > now:
            self._schedule(group_id)  # moved on since it was set
            return
        before = set(group.members)
        await self.run_classic(group, classic_shard.expire(group, now), now)
        gone = (before - set(group.members)) | set(await self.expire_consumer_members(group, now))
        if gone:
            log.info("group %s: removed %s after their session or rebalance timeout; %s, "
                     "generation %d", group_id, sorted(gone), group.state, group.generation_id)
        self._maybe_forget(group)
        self._schedule(group_id)

    async def _expire_offsets(self, now: int) -> None:
        for group in list(self.groups.values()):
            expiry = expire(group, now)
            try:
                await self.persist(expiry.records)
            except KafkaError as exc:  # nothing removed: the next check tries again
                log.warning("could not expire offsets of group %s: %s", group.group_id, exc)
                continue
            if expiry.records:
                log.info("group %s: expired %d offsets%s", group.group_id, expiry.expired,
                         " and removed the group" if expiry.dead else "")

    async def _execute(self, cmd: c.Command) -> None:
        match cmd:
            # Join and Sync may be parked: their replies come when the rebalance step completes.
            case c.JoinGroup():
                await self.do_join(cmd)
            case c.SyncGroup():
                await self.do_sync(cmd)
            case c.LeaveGroup():
                await self.do_leave(cmd)
            case c.Heartbeat():
                cmd.reply.set_result(self.do_heartbeat(cmd))
            case c.ConsumerGroupHeartbeat():
                cmd.reply.set_result(await self.do_consumer_heartbeat(cmd))
            case c.ConsumerGroupDescribe():
                cmd.reply.set_result(self.do_consumer_describe(cmd))
            case _:
                await self._execute_offsets_and_admin(cmd)

    async def _execute_offsets_and_admin(
        self, cmd: c.CommitOffsets | c.FetchOffsets | c.DescribeGroups | c.ListGroups | c.DeleteGroups
        | c.DeleteOffsets | c.TopicsDeleted | c.CompleteTxn | c.InstallShard,
    ) -> None:
        match cmd:
            case c.CommitOffsets():
                cmd.reply.set_result(await self.do_commit(cmd))
            case c.FetchOffsets():
                cmd.reply.set_result(self.do_fetch(cmd))
            case c.DescribeGroups():
                cmd.reply.set_result(self.do_describe(cmd))
            case c.ListGroups():
                cmd.reply.set_result(self.do_list(cmd))
            case c.DeleteGroups():
                cmd.reply.set_result(await self.do_delete_groups(cmd))
            case c.DeleteOffsets():
                cmd.reply.set_result(await self.do_delete_offsets(cmd))
            case c.TopicsDeleted():
                cmd.reply.set_result(await self.do_topics_deleted(cmd))
            case c.CompleteTxn():
                self.do_complete_txn(cmd)
                cmd.reply.set_result(None)
            case c.InstallShard():
                self._install(cmd.partition, cmd.epoch, cmd.groups, cmd.records, cmd.seconds)
                cmd.reply.set_result(None)
            case _:
                assert_never(cmd)
