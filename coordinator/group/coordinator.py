"""GroupCoordinator: the actor that owns every classic group and its committed offsets.

One task runs _run() over a queue of typed commands; the public methods only enqueue a command
and await its reply, so group state is touched by one task and needs no locks. The pure rules
live in GroupMetadata (metadata.py) and OffsetStore (offsets.py); this module sequences the
__consumer_offsets writes around them, Kafka's way:

- decide (validate, compute the outcome), persist (append the records), then apply and reply.
  A commit is acknowledged only once its records are in the log; a SyncGroup or a group emptying
  out is answered only once the group record is.
- OffsetCommits queued one behind the other are decided one by one, then written with one
  append per __consumer_offsets partition (Kafka's coordinator runtime batches writes alike): a
  consumer group's members committing together cost the log one batch, not one each.
- at start-up every partition of __consumer_offsets is replayed (loader.py) before the broker
  listens, so a restarted broker answers OffsetFetch with what it acknowledged before. In cluster
  mode each partition is a shard loaded when this broker is elected its leader (sharding.py).
- session, rebalance and sync timeouts run off the queue's wait: the loop sleeps until the
  earliest group deadline (or the next offset-retention check) and then calls tick().
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from typing import Any, TypeVar, assert_never

from kio.schema.errors import ErrorCode

from protocol.errors import KafkaError
from storage.api import ClusterView, LogSource, TopicPartition

from ..transaction.metadata import ProducerIdAndEpoch
from . import commands as c
from .classic_operations import ClassicInConsumerOperations
from .config import GroupConfig
from .consumer_group import ConsumerGroupState
from .consumer_heartbeat import ConsumerGroupConfig, HeartbeatRequest, HeartbeatResult
from .consumer_operations import group_deadline
from .consumer_persist import ConsumerGroupDescription
from .group_offsets import remove_expired_offsets
from .log import CONSUMER_OFFSETS_TOPIC, partition_for
from .member import JoinGroupResult, JoinParams, SyncGroupResult
from .offsets import OffsetAndMetadata
from .sharding import ShardedGroups, fail_waiters
from .snapshot import GroupSummary
from .state import GroupState

__all__ = ("GroupCoordinator",)

log = logging.getLogger(__name__)
R = TypeVar("R")


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


def _is_offset_commit(cmd: c.Command) -> bool:
    """An OffsetCommit: TxnOffsetCommits are written as their producer's batches, one each."""
    return type(cmd) is c.CommitOffsets and cmd.producer is None


class GroupCoordinator(ClassicInConsumerOperations, ShardedGroups):
    """Public face: one coroutine per group API; see commands.py for what each carries."""

    def __init__(
        self,
        logs: LogSource,
        config: GroupConfig | None = None,
        *,
        clock_ms: Callable[[], int] = _wall_clock_ms,
        consumer_config: ConsumerGroupConfig | None = None,
        cluster: ClusterView | None = None,
    ) -> None:
        super().__init__(logs, config or GroupConfig(), clock_ms)
        self.consumer_config = consumer_config or ConsumerGroupConfig()
        self._init_shards()
        self.cluster = cluster
        self._queue: asyncio.Queue[c.Command] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._next_retention_check_ms = 0
        self._timers: list[tuple[int, str]] = []  # (deadline ms, group id), a lazy heap
        self._held: c.Command | None = None  # taken from the queue behind OffsetCommits, served next

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Create __consumer_offsets if needed and start serving; a broker that leads everything
        (or has no ClusterView) replays every partition first, a cluster member loads the shards
        it is elected to."""
        self.num_partitions = await self.ensure_topic(self.config)
        self._next_retention_check_ms = self._clock_ms() + self.config.offsets_retention_check_interval_ms
        self._task = asyncio.get_running_loop().create_task(self._run(), name="group-coordinator")
        self._task.add_done_callback(self._on_done)
        if self.cluster is None or self.cluster.leads_everything:
            await self.elect_all(0)
        else:
            self.cluster.add_listener(self)

    async def _in_actor(self, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
        await self._call(lambda r: c.RunInActor(fn=fn, reply=r))

    async def stop(self) -> None:
        await self._loads.stop()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def _on_done(self, task: asyncio.Task[None]) -> None:
        # Supervision: nobody may wait forever on a dead actor, parked joins and syncs included.
        exc = None if task.cancelled() else task.exception()
        if exc is not None:
            log.error("group coordinator died: %r", exc, exc_info=exc)
        error = KafkaError(ErrorCode.coordinator_not_available, "group coordinator stopped")
        waiting: list[c.Command] = [] if self._held is None else [self._held]
        self._held = None
        while not self._queue.empty():
            waiting.append(self._queue.get_nowait())
        for cmd in waiting:
            if not cmd.reply.done():
                cmd.reply.set_exception(error)
        for group in self.groups.values():
            fail_waiters(group, error)

    # -- public face -------------------------------------------------------------------------------

    def partition_for(self, group_id: str) -> TopicPartition:
        """The __consumer_offsets partition holding the group (where txn markers must go)."""
        return TopicPartition(CONSUMER_OFFSETS_TOPIC, partition_for(group_id, self.num_partitions))

    async def _call(self, make: Callable[[asyncio.Future[R]], c.Command]) -> R:
        if self._task is None or self._task.done():
            raise KafkaError(
                ErrorCode.coordinator_not_available, "group coordinator is not running"
            )
        reply: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(make(reply))
        return await reply

    async def join_group(self, group_id: str, params: JoinParams) -> JoinGroupResult:
        return await self._call(lambda r: c.JoinGroup(group_id=group_id, params=params, reply=r))

    async def sync_group(
        self,
        group_id: str,
        *,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        assignments: Mapping[str, bytes] | None = None,
    ) -> SyncGroupResult:
        return await self._call(
            lambda r: c.SyncGroup(
                group_id=group_id,
                member_id=member_id,
                generation_id=generation_id,
                group_instance_id=group_instance_id,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                assignments=dict(assignments or {}),
                reply=r,
            )
        )

    async def heartbeat(
        self,
        group_id: str,
        *,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None = None,
    ) -> ErrorCode:
        return await self._call(
            lambda r: c.Heartbeat(
                group_id=group_id,
                member_id=member_id,
                generation_id=generation_id,
                group_instance_id=group_instance_id,
                reply=r,
            )
        )

    async def leave_group(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        return await self._call(
            lambda r: c.LeaveGroup(group_id=group_id, members=tuple(members), reply=r)
        )

    async def commit_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        *,
        member_id: str = "",
        generation_id: int = -1,
        group_instance_id: str | None = None,
        retention_ms: int | None = None,
        producer: ProducerIdAndEpoch | None = None,
        api_version: int = 9,
    ) -> dict[TopicPartition, ErrorCode]:
        """OffsetCommit; with a producer, TxnOffsetCommit: the offsets are written as a
        transactional batch of the producer and held pending until complete_txn (KIP-447: a
        known member id or generation is checked)."""
        return await self._call(
            lambda r: c.CommitOffsets(
                group_id=group_id,
                member_id=member_id,
                generation_id=generation_id,
                group_instance_id=group_instance_id,
                offsets=dict(offsets),
                retention_ms=retention_ms,
                producer=producer,
                api_version=api_version,
                reply=r,
            )
        )

    async def fetch_offsets(
        self,
        group_id: str,
        partitions: Sequence[TopicPartition] | None,
        require_stable: bool = False,
        *,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> list[c.FetchedOffset]:
        """Raises KafkaError (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH) for a consumer-protocol
        member that is not (or no longer) at this epoch."""
        result: list[c.FetchedOffset] | KafkaError = await self._call(
            lambda r: c.FetchOffsets(
                group_id=group_id,
                partitions=None if partitions is None else tuple(partitions),
                require_stable=require_stable,
                member_id=member_id,
                member_epoch=member_epoch,
                reply=r,
            )
        )
        if isinstance(result, KafkaError):
            raise result
        return result

    async def consumer_group_heartbeat(self, group_id: str, request: HeartbeatRequest) -> HeartbeatResult:
        """ConsumerGroupHeartbeat (KIP-848); raises KafkaError with the error to answer."""
        result: HeartbeatResult | KafkaError = await self._call(
            lambda r: c.ConsumerGroupHeartbeat(group_id=group_id, request=request, reply=r))
        if isinstance(result, KafkaError):
            raise result
        return result

    async def consumer_group_describe(self, group_ids: Sequence[str]) -> list[ConsumerGroupDescription]:
        return await self._call(lambda r: c.ConsumerGroupDescribe(group_ids=tuple(group_ids), reply=r))

    async def describe_groups(self, group_ids: Sequence[str]) -> list[GroupSummary]:
        return await self._call(lambda r: c.DescribeGroups(group_ids=tuple(group_ids), reply=r))

    async def list_groups(
        self, states: Collection[str] = ()
    ) -> list[tuple[str, str, GroupState | ConsumerGroupState]]:
        """(group id, protocol type, state) of every live group, optionally filtered by state name."""
        return await self._call(lambda r: c.ListGroups(states=frozenset(states), reply=r))

    async def delete_groups(self, group_ids: Sequence[str]) -> dict[str, ErrorCode]:
        return await self._call(lambda r: c.DeleteGroups(group_ids=tuple(group_ids), reply=r))

    async def delete_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        return await self._call(
            lambda r: c.DeleteOffsets(group_id=group_id, partitions=tuple(partitions), reply=r)
        )

    async def topics_deleted(self, topics: Collection[str]) -> int:
        """Drop every group's offsets of deleted topics, as Kafka's handleDeletedPartitions does,
        so a topic created again under the name starts without stale offsets; return how many."""
        return await self._call(lambda r: c.TopicsDeleted(topics=frozenset(topics), reply=r))

    async def complete_txn(
        self, producer_id: int, group_ids: Collection[str] | None, commit: bool
    ) -> None:
        """Apply (commit) or drop (abort) the producer's pending offsets in these groups (all
        groups if None). Call it after the marker is in the group's __consumer_offsets partition:
        the marker is what replay uses to reach the same result after a restart."""
        return await self._call(
            lambda r: c.CompleteTxn(
                producer_id=producer_id,
                group_ids=None if group_ids is None else frozenset(group_ids),
                commit=commit,
                reply=r,
            )
        )

    # -- the owner task ------------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            cmds = await self._next_commands()
            # Expire what is due first: a command arriving late must see the expiry.
            await self._run_timers()
            if cmds and _is_offset_commit(cmds[0]):
                await self._serve_commits(cmds)
            elif cmds:
                await self._serve(cmds[0])
            await self._run_timers()

    async def _next_commands(self) -> list[c.Command]:
        """The next command (none if a deadline comes first), with the OffsetCommits queued right
        behind an OffsetCommit: their records go in one append. The first other command waits for
        the next turn, so every command is still served in arrival order."""
        if self._held is not None:
            cmd, self._held = self._held, None
        elif not self._queue.empty():
            cmd = self._queue.get_nowait()  # busy: no wait to arm a timeout for
        else:
            timeout = max(self._next_deadline_ms() - self._clock_ms(), 0) / 1000
            try:
                cmd = await asyncio.wait_for(self._queue.get(), timeout)
            except TimeoutError:
                return []
        cmds = [cmd]
        while _is_offset_commit(cmd) and not self._queue.empty():
            following = self._queue.get_nowait()
            if not _is_offset_commit(following):
                self._held = following
                break
            cmds.append(following)
        return cmds

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
        group_id = getattr(cmd, "group_id", None)
        if group_id is not None:
            self._schedule(group_id)

    async def _serve_commits(self, cmds: Sequence[c.Command]) -> None:
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
        """Remember the group's next deadline. Entries go stale when a heartbeat moves the
        deadline; _run_timers re-checks each against the group and drops the stale ones."""
        group = self.groups.get(group_id)
        deadline = None if group is None else group_deadline(group)
        if deadline is not None:
            heapq.heappush(self._timers, (deadline, group_id))

    def _next_deadline_ms(self) -> int:
        if self._timers:
            return min(self._timers[0][0], self._next_retention_check_ms)
        return self._next_retention_check_ms

    async def _run_timers(self) -> None:
        now = self._clock_ms()
        while self._timers and self._timers[0][0] <= now:
            _, group_id = heapq.heappop(self._timers)
            group = self.groups.get(group_id)
            deadline = None if group is None else group_deadline(group)
            if group is None or deadline is None or deadline > now:
                continue  # stale: the group's real deadline has its own entry
            before = set(group.members)
            await self.complete(group, group.tick(now), now)
            gone = (before - set(group.members)) | set(await self.expire_consumer_members(group, now))
            if gone:
                log.info("group %s: removed %s after their session or rebalance timeout; %s, "
                         "generation %d", group_id, sorted(gone), group.state, group.generation_id)
            self._maybe_forget(group)
            self._schedule(group_id)
        if now >= self._next_retention_check_ms:
            self._next_retention_check_ms = now + self.config.offsets_retention_check_interval_ms
            await self._expire_offsets(now)

    async def _expire_offsets(self, now: int) -> None:
        for group in list(self.groups.values()):
            expired = remove_expired_offsets(group, now)
            dead = group.is_empty() and not group.offsets.has_offsets()
            if not expired and not dead:
                continue
            try:
                await self.write_tombstones(group, expired, group_too=dead, now=now)
            except KafkaError as exc:
                log.warning("could not expire offsets of group %s: %s", group.group_id, exc)
                continue
            if dead:
                group.state = GroupState.DEAD
                del self.groups[group.group_id]
            log.info(
                "group %s: expired %d offsets%s",
                group.group_id,
                len(expired),
                " and removed the group" if dead else "",
            )

    async def _execute(self, cmd: c.Command) -> None:
        match cmd:
            # Join and Sync may be parked: their replies come when the rebalance step completes.
            case c.JoinGroup():
                await self.do_join(cmd)
            case c.SyncGroup():
                await self.do_sync(cmd)
            case c.LeaveGroup():
                await self.do_leave(cmd)
            case c.ConsumerGroupHeartbeat():
                cmd.reply.set_result(await self.do_consumer_heartbeat(cmd))
            case c.ConsumerGroupDescribe():
                cmd.reply.set_result(self.do_consumer_describe(cmd))
            case _:
                cmd.reply.set_result(await self._answer(cmd))

    async def _answer(self, cmd: c.Command) -> Any:
        match cmd:
            case c.Heartbeat():
                return self.do_heartbeat(cmd)
            case c.CommitOffsets():
                return await self.do_commit(cmd)
            case c.FetchOffsets():
                return self.do_fetch(cmd)
            case c.DescribeGroups():
                return self.do_describe(cmd)
            case c.ListGroups():
                return self.do_list(cmd)
            case c.DeleteGroups():
                return await self.do_delete_groups(cmd)
            case c.DeleteOffsets():
                return await self.do_delete_offsets(cmd)
            case c.TopicsDeleted():
                return await self.do_topics_deleted(cmd)
            case c.CompleteTxn():
                return self.do_complete_txn(cmd)
            case c.RunInActor():
                return await cmd.fn()
            case (c.JoinGroup() | c.SyncGroup() | c.LeaveGroup() | c.ConsumerGroupHeartbeat()
                  | c.ConsumerGroupDescribe()):
                raise AssertionError("executed by _execute")
            case _:
                assert_never(cmd)
