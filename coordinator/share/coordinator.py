"""The share group coordinator and share-partition leader of one broker (KIP-932).

It holds the share groups (group.py), the share sessions (sessions.py) and the share-partitions
(partitions.py), and runs one timer task: acquisition locks that run out release their records,
and members not heard from within share.session.timeout.ms leave; dead letters not yet written
(restored ARCHIVING, or refused by their topic's log) are tried again. A member that leaves, by its
heartbeat at epoch -1 or by timing out, has every record it holds released, as Kafka's group
coordinator tells its share-partitions; one that timed out loses its share session too (one that
left closes its own with a final ShareAcknowledge). Groups with persisted state and no members are
listed after a restart as Empty.

In cluster mode (a ShareStateStore given) the groups served are those whose group coordinator
shard is led here (group_owner), the share-partitions those of partitions led here (they go on
resignation), and their states live at the share coordinator of each key (state_shards.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence

from protocol.errors import ErrorCode, KafkaError
from storage.api import LogSource, TopicPartition

from ..tasks import TaskSupervisor
from .admin import ClusterShareAdmin, ShareStateAdmin, ShareStateSummary, Summary
from .dead_letters import DeadLetterSettings, DeadLetterWriter
from .group import HeartbeatResult, ShareGroup, ShareHeartbeat, TopicInfo, validate
from .group_store import CONSUMER_OFFSETS, PersistedGroups, ShareGroupStore
from .initializer import ShareInitializer
from .partitions import ShareGroupSettings, SharePartitionManager, UninitializedSharePartition
from .requests import AckBatches, ShareAckRequest, ShareFetchParams, ShareFetchResult
from .sessions import FINAL_EPOCH, INITIAL_EPOCH, ShareSession, ShareSessionCache
from .state_log import SharePartitionKey, ShareStateLog, ShareStateStore

__all__ = ("AckBatches", "ShareAckRequest", "ShareCoordinator", "ShareFetchParams", "ShareFetchResult")

log = logging.getLogger(__name__)

class ShareCoordinator:
    def __init__(self, logs: LogSource, settings: Callable[[str], ShareGroupSettings], *,
                 state_topic_partitions: int = 50, max_sessions: int = 2000, max_group_size: int = 200,
                 other_group_exists: Callable[[str], bool] = lambda _: False,
                 dead_letter_settings: Callable[[], DeadLetterSettings] = DeadLetterSettings,
                 store: ShareStateStore | None = None, admin: ShareStateAdmin | None = None,
                 group_owner: Callable[[str], None] = lambda _: None,
                 group_log: Callable[[str], TopicPartition] | None = None,
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        """store: where share-partition states live (default: this broker's __share_group_state);
        admin: the share coordinators' administrative calls (cluster mode); group_owner raises
        NOT_COORDINATOR for a group whose coordinator is another broker; group_log: the group's
        __consumer_offsets partition, where its membership is persisted (group_store.py)."""
        self.logs = logs
        self.settings = settings
        self.groups: dict[str, ShareGroup] = {}
        self.sessions = ShareSessionCache(max_sessions)
        self.manager = SharePartitionManager(logs, store or ShareStateLog(logs, state_topic_partitions), settings,
                                             clock_ms, DeadLetterWriter(logs, dead_letter_settings, clock_ms))
        self.group_owner = group_owner
        self.clustered = store is not None
        self._admin = ClusterShareAdmin(logs, admin) if admin is not None else None
        self.max_group_size = max_group_size
        self.other_group_exists = other_group_exists
        self._clock_ms = clock_ms
        self.persisted = PersistedGroups(self.groups, ShareGroupStore(logs, group_log, clock_ms) if group_log else None,
                                         lambda g: settings(g).session_timeout_ms, self._topics, clock_ms)
        self._initializer = ShareInitializer(logs, self.manager, self._admin, self.groups, self.persisted.persist)
        self._task: asyncio.Task[None] | None = None
        # sessions ending with their connections, share-partitions being initialized
        self._background = TaskSupervisor("share coordinator")

    async def start(self) -> None:
        await self.manager.load()
        meta = self.logs.topics.get(CONSUMER_OFFSETS)
        for partition in range(meta.partitions if meta is not None and not self.clustered else 0):
            await self.persisted.load(TopicPartition(CONSUMER_OFFSETS, partition))
        for key in self.manager.stored_keys():
            self.groups.setdefault(key.group_id, ShareGroup(key.group_id))
        self._task = asyncio.get_running_loop().create_task(self._run_timers(), name="share-coordinator")
        self._initialize_missing()

    def _initialize_missing(self) -> None:
        groups = [g for g, group in self.groups.items() if group.initialized]
        if groups:
            self._background.spawn("initializing share-partitions without a state",
                                   lambda: self._initializer.initialize_missing(groups))

    async def stop(self) -> None:
        await self._background.stop()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    # -- cluster mode: share-partitions follow their partition's leadership ---------------------

    async def on_elected(self, tp: TopicPartition, leader_epoch: int) -> None:
        # its share-partitions are read from their share coordinator when first used, with this
        # epoch; what an earlier election left here is stale
        self.manager.forget(tp)
        self.manager.leader_epochs[tp] = leader_epoch
        if tp.topic == CONSUMER_OFFSETS:
            await self.persisted.load(tp)
            self._initialize_missing()

    async def on_resigned(self, tp: TopicPartition) -> None:
        self.manager.forget(tp)
        if tp.topic == CONSUMER_OFFSETS:
            self.persisted.drop(tp)

    def _owned(self, group_id: str) -> None:
        """NOT_COORDINATOR for a group coordinated elsewhere (what it had here is stale: dropped)."""
        try:
            self.group_owner(group_id)
        except KafkaError:
            self.groups.pop(group_id, None)
            raise
        self.persisted.check_loaded(group_id)

    # -- membership ----------------------------------------------------------------------------

    def _topics(self) -> dict[str, TopicInfo]:
        return {name: TopicInfo(meta.topic_id, meta.partitions) for name, meta in self.logs.topics.items()}

    async def heartbeat(self, group_id: str, hb: ShareHeartbeat) -> tuple[HeartbeatResult, int]:
        """One ShareGroupHeartbeat: the result and the heartbeat interval to answer with."""
        if not group_id:
            raise KafkaError(ErrorCode.invalid_group_id, "GroupId can't be empty.")
        validate(hb)  # before a group is made for it
        self._owned(group_id)
        settings = self.settings(group_id)
        group = self.groups.get(group_id)
        if group is None:
            if hb.member_epoch != 0:
                raise KafkaError(ErrorCode.group_id_not_found, f"Share group {group_id} not found.")
            if self.other_group_exists(group_id):
                raise KafkaError(ErrorCode.group_id_not_found, f"Group {group_id} is not a share group.")
            group = self.groups[group_id] = ShareGroup(group_id)
        left = hb.member_epoch == FINAL_EPOCH and hb.member_id in group.members
        now = self._clock_ms()
        result = group.heartbeat(hb, self._topics(), now, settings.session_timeout_ms, self.max_group_size)
        todo = self._initializer.due(group, now) if hb.member_epoch != FINAL_EPOCH else {}
        await self.persisted.persist(group_id)
        if todo:  # after the answer, as Kafka's GroupCoordinatorService initializes them
            epoch = group.group_epoch
            self._background.spawn(f"initializing share group {group_id}",
                                   lambda: self._initializer.run(group_id, epoch, todo))
        # A leaving member's records go back when its share session here ends (the final
        # ShareAcknowledge, which librdkafka sends beside the leave, applies its acknowledgements
        # first; or the connection closing); at once if it has none here. Releasing them at the
        # leave refused the acknowledgements of a closing consumer, and its records came again.
        if left and self.sessions.get(group_id, hb.member_id) is None:
            await self.manager.release_member(group_id, hb.member_id)
        return result, settings.heartbeat_interval_ms

    async def _member_gone(self, group_id: str, member_id: str) -> None:
        self.sessions.drop_member(group_id, member_id)
        await self._released(group_id, member_id)

    async def _released(self, group_id: str, member_id: str) -> None:
        """The member's records go back; once the group has no share session here, its
        share-partitions go from this broker's cache (Kafka's ShareGroupListener.onGroupEmpty), so
        the next one read again sees a start offset altered meanwhile."""
        await self.manager.release_member(group_id, member_id)
        if self.clustered and not self.sessions.has_group(group_id):
            self.manager.forget_group(group_id)

    def connection_closed(self, connection: str) -> None:
        """The share sessions the connection opened end, and their members' records go back (in
        a task), as Kafka's share session cache does when a client's connection closes."""
        ended = self.sessions.end_connection(connection)
        if ended:
            self._background.spawn(f"share sessions of {connection}", lambda: self._end_sessions(connection, ended))

    async def _end_sessions(self, connection: str, ended: list[ShareSession]) -> None:
        for session in ended:
            log.info("share group %s: member %s's share session ended with its connection %s",
                     session.group_id, session.member_id, connection)
            try:
                await self._released(session.group_id, session.member_id)
            except KafkaError as exc:  # their locks run out instead
                log.warning("share group %s: member %s's records not released: %s", session.group_id,
                            session.member_id, exc)

    async def _expire_members(self) -> None:
        now = self._clock_ms()
        for group in list(self.groups.values()):
            for member_id in group.expired(now):
                log.info("share group %s: member %s left (session timed out)", group.group_id, member_id)
                group.remove(member_id)
                await self.persisted.persist(group.group_id)
                await self._member_gone(group.group_id, member_id)
        await self.persisted.retry()

    async def _run_timers(self) -> None:
        while True:
            self.manager.locks_changed.clear()
            wait_s: float | None = 1.0
            try:
                next_lock = await self.manager.expire_locks()
                await self._expire_members()
                await self.manager.send_due_dead_letters()
                wait_s = 1.0 if next_lock is None else min(1.0, next_lock)
            except KafkaError as exc:  # a failed write (the share coordinator away): try again
                log.warning("share coordinator timers: %s; trying again", exc)
            except Exception:
                log.exception("share coordinator timers failed")
            try:  # asyncio.timeout: Python 3.11's wait_for loses a cancel (stop) that comes with a change
                async with asyncio.timeout(wait_s):
                    await self.manager.locks_changed.wait()
            except TimeoutError:
                pass

    # -- ShareFetch and ShareAcknowledge -------------------------------------------------------

    async def share_fetch(self, params: ShareFetchParams) -> ShareFetchResult:
        session, replaced = self.sessions.for_fetch(params.group_id, params.member_id, params.epoch,
                                                    bool(params.acks), params.connection)
        if replaced is not None:
            await self.manager.release_member(params.group_id, params.member_id)
        result = ShareFetchResult(lock_duration_ms=self.settings(params.group_id).record_lock_duration_ms)
        result.ack_errors = await self._acknowledge(params.group_id, params.member_id, params.acks)
        if session is None:  # epoch -1: the session ends once its acknowledgements are done
            self.sessions.close(params.group_id, params.member_id)
            await self._released(params.group_id, params.member_id)
            return result
        session.update(params.added, params.forgotten)
        if params.fetch:
            await self._fetch(session, params, result)
        return result

    async def _acknowledge(self, group_id: str, member_id: str,
                           acks: ShareAckRequest) -> dict[tuple[uuid.UUID, int], KafkaError | None]:
        out: dict[tuple[uuid.UUID, int], KafkaError | None] = {}
        for (topic_id, index), (tp, batches) in acks.items():
            try:
                partition = await self.manager.partition(SharePartitionKey(group_id, topic_id, index), tp)
                await self.manager.acknowledge(partition, member_id, batches)
                out[(topic_id, index)] = None
            except UninitializedSharePartition:  # Kafka has no share-partition to acknowledge at
                out[(topic_id, index)] = KafkaError(ErrorCode.unknown_topic_or_partition,
                                                    "This server does not host this topic-partition.")
            except KafkaError as exc:
                out[(topic_id, index)] = exc
        return out

    async def _fetch(self, session: ShareSession, params: ShareFetchParams, result: ShareFetchResult) -> None:
        if params.max_bytes <= 0:  # as Kafka, nothing is acquired within 0 bytes: the fetch only waits
            await asyncio.sleep(params.max_wait_ms / 1000)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + params.max_wait_ms / 1000
        while True:
            partitions = []
            records_left, bytes_left = params.max_records, params.max_bytes
            for key, tp in list(session.partitions.items()):
                if self.logs.find_log(tp) is None:
                    result.errors[key] = KafkaError(ErrorCode.unknown_topic_or_partition,
                                                    f"{tp} does not exist")
                    continue
                try:
                    partition = await self.manager.partition(SharePartitionKey(session.group_id, *key), tp)
                except KafkaError as exc:  # its state unreadable here (a newer leader fenced this one)
                    result.errors[key] = exc
                    continue
                partitions.append(partition)
                if records_left <= 0 or bytes_left <= 0:
                    continue
                got = await self.manager.acquire(partition, session.member_id, records_left, bytes_left,
                                                 params.whole_batches)
                if got.ranges:
                    result.fetched[key] = got
                    records_left -= sum(r.last_offset - r.first_offset + 1 for r in got.ranges)
                    bytes_left -= got.size
            remaining = deadline - loop.time()
            if result.fetched or remaining <= 0 or not partitions:
                return
            if not any(self.manager.has_available(p) for p in partitions):
                await self.manager.wait(partitions, remaining)

    async def share_acknowledge(self, group_id: str, member_id: str, epoch: int,
                                acks: ShareAckRequest) -> tuple[dict[tuple[uuid.UUID, int], KafkaError | None], int]:
        """ShareAcknowledge: the session must exist; epoch -1 ends it after the acknowledgements."""
        if epoch == INITIAL_EPOCH:
            raise KafkaError(ErrorCode.invalid_share_session_epoch,
                             "A ShareAcknowledge request cannot open a share session (epoch 0).")
        if epoch == FINAL_EPOCH:
            self.sessions.close(group_id, member_id)
        else:
            self.sessions.advance(group_id, member_id, epoch)
        errors = await self._acknowledge(group_id, member_id, acks)
        if epoch == FINAL_EPOCH:
            await self._released(group_id, member_id)
        return errors, self.settings(group_id).record_lock_duration_ms

    # -- administration ------------------------------------------------------------------------

    def list_groups(self) -> list[tuple[str, str]]:
        out = []
        for group in list(self.groups.values()):
            try:
                self._owned(group.group_id)
            except KafkaError:
                continue
            out.append((group.group_id, group.state))
        return out

    def describe(self, group_id: str) -> ShareGroup | None:
        self._owned(group_id)
        return self.groups.get(group_id)

    async def known(self, group_id: str) -> ShareGroup | None:
        """The group, also (cluster mode) one with state but no members since its coordinator moved
        here (membership is not persisted): that one is made, Empty."""
        group = self.describe(group_id)
        if group is None and self._admin is not None and not self.other_group_exists(group_id) \
                and await self._admin.has_state(group_id):
            group = self.groups.setdefault(group_id, ShareGroup(group_id))
        return group

    async def _empty_group(self, group_id: str, create: bool = False) -> ShareGroup:
        group = await self.known(group_id)
        if group is None:
            if not create:
                raise KafkaError(ErrorCode.group_id_not_found, f"Group {group_id} not found.")
            if self.other_group_exists(group_id):
                raise KafkaError(ErrorCode.group_id_not_found, f"Group {group_id} is not a share group.")
            group = self.groups[group_id] = ShareGroup(group_id)
        if group.members:
            raise KafkaError(ErrorCode.non_empty_group, "The group is not empty.")  # Kafka's Errors.NON_EMPTY_GROUP
        return group

    async def delete_group(self, group_id: str) -> None:
        group = await self._empty_group(group_id)
        if self._admin is not None:
            keys = list(await self._admin.states(group_id, candidates=self.persisted.keys(group)))
            for error in (await self._admin.delete(keys)).values():
                if error is not None:
                    raise error
        else:
            await self.manager.delete(k for k in self.manager.stored_keys() if k.group_id == group_id)
        self.groups.pop(group_id, None)
        await self.persisted.persist(group_id)

    def group_keys(self, group_id: str) -> list[SharePartitionKey]:
        return sorted((k for k in self.manager.stored_keys() if k.group_id == group_id),
                      key=lambda k: (str(k.topic_id), k.partition))

    async def offsets(self, group_id: str, keys: Sequence[SharePartitionKey] | None,
                      ) -> dict[SharePartitionKey, Summary]:
        """DescribeShareGroupOffsets: the keys' states (keys None: every one the group has)."""
        if self._admin is not None:
            group = self.groups.get(group_id)
            return await self._admin.states(group_id, keys, self.persisted.keys(group) if group else None)
        out: dict[SharePartitionKey, Summary] = {}
        for key in self.group_keys(group_id) if keys is None else keys:
            stored = self.manager.stored_state(key)
            out[key] = ShareStateSummary.of(stored) if stored is not None else None
        return out

    async def alter_offsets(self, group_id: str, offsets: Mapping[SharePartitionKey, tuple[TopicPartition, int]]) \
            -> dict[SharePartitionKey, KafkaError | None]:
        group = await self._empty_group(group_id, create=True)
        async with self._initializer.lock(group_id):  # not beside initialize_missing's read-then-write
            if self._admin is not None:  # at the share coordinators; the leaders read it again
                errors = await self._admin.alter({key: offset for key, (_, offset) in offsets.items()})
            else:
                errors = {}
                for key, (tp, offset) in offsets.items():
                    await self.manager.alter_start(key, tp, offset)
            await self._initializer.altered(group, {k: tp for k, (tp, _) in offsets.items() if errors.get(k) is None})
        return errors

    async def delete_offsets(self, group_id: str, topic_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, KafkaError]:
        """The topics' states; the topics whose states could not all be deleted, with why."""
        return await self._delete_states(await self._empty_group(group_id), topic_ids)

    async def topics_deleted(self, topic_ids: Sequence[uuid.UUID]) -> None:
        """Deleted topics' share-partition states go, and the groups coordinated here forget them,
        as Kafka's group coordinator has them deleted when the topics are."""
        for group in list(self.groups.values()):
            gone = [t for t in topic_ids if t in group.initialized or t in group.initializing]
            try:
                self._owned(group.group_id)
            except KafkaError:  # coordinated elsewhere now
                continue
            if gone and (failed := await self._delete_states(group, gone)):
                log.warning("share group %s: states of deleted topics not deleted: %s", group.group_id, failed)

    async def _delete_states(self, group: ShareGroup, topic_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, KafkaError]:
        group_id = group.group_id
        if self._admin is None:
            await self.manager.delete(k for k in self.manager.stored_keys()
                                      if k.group_id == group_id and k.topic_id in topic_ids)
            failed = {}
        else:
            keys = [k for k in self.persisted.keys(group) or self._admin.every_key(group_id) if k.topic_id in topic_ids]
            failed = {k.topic_id: e for k, e in (await self._admin.delete(keys)).items() if e is not None}
        for topic_id in set(topic_ids) - set(failed):
            group.initialized.pop(topic_id, None)
            group.initializing.pop(topic_id, None)
        await self.persisted.persist(group_id)
        return failed
