"""Share groups persisted in __consumer_offsets, as Kafka's group coordinator keeps them.

After each change of a group (a member joined, left or timed out, a new assignment, share-partitions
initialized, offsets altered or deleted, the group deleted) the records that differ from those last
written for it are appended to the group's __consumer_offsets partition in one batch, with
tombstones for what is gone. Loading a partition (at start, or when its group coordinator shard
is elected here) replays them: the groups come back with their members (who then heartbeat again
or time out, as in Kafka) and the list of their initialized share-partitions, which the
administrative calls use.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Mapping

from protocol.errors import ErrorCode, KafkaError
from protocol.records import Record, build_batch, read_records
from storage.api import AppendOrigin, LogSource, TopicPartition

from .group import ShareGroup, TopicInfo
from .group_records import SHARE_RECORD_TYPES, RecordKey, decode_key, group_records, share_group
from .state_log import SharePartitionKey

__all__ = ("CONSUMER_OFFSETS", "PersistedGroups", "ShareGroupStore")

CONSUMER_OFFSETS = "__consumer_offsets"

log = logging.getLogger(__name__)
_READ_BYTES = 1 << 20


class ShareGroupStore:
    def __init__(self, logs: LogSource, partition_of: Callable[[str], TopicPartition],
                 clock_ms: Callable[[], int]) -> None:
        self._logs = logs
        self.partition_of = partition_of
        self._clock_ms = clock_ms
        self._written: dict[str, dict[RecordKey, bytes]] = {}  # group -> the last value of each key

    def _changes(self, group_id: str, group: ShareGroup | None) -> list[tuple[RecordKey, bytes | None]]:
        names = {meta.topic_id: name for name, meta in self._logs.topics.items()}
        wanted = group_records(group, names) if group is not None else {}
        before = self._written.get(group_id, {})
        gone: list[tuple[RecordKey, bytes | None]] = [(k, None) for k in sorted(before) if k not in wanted]
        return gone + [(k, v) for k, v in sorted(wanted.items()) if before.get(k) != v]

    async def persist(self, group_id: str, group: ShareGroup | None) -> None:
        """Write what changed of the group (None: it is deleted); KafkaError if the append fails,
        and then the next persist writes it again."""
        changes = self._changes(group_id, group)
        if not changes:
            return
        now = self._clock_ms()
        records = [Record(timestamp=now, key=k.encode(), value=v) for k, v in changes]
        batch = build_batch(records)
        await self._logs.get_log(self.partition_of(group_id)).append(bytes(batch), AppendOrigin.COORDINATOR)
        written = self._written.setdefault(group_id, {})
        for key, value in changes:
            if value is None:
                written.pop(key, None)
            else:
                written[key] = value
        if not written:
            del self._written[group_id]

    def has(self, group_id: str) -> bool:
        """Whether the group's records are in its partition."""
        return group_id in self._written

    def forget(self, tp: TopicPartition) -> None:
        """What was written for the partition's groups is no longer known here (the shard moved)."""
        for group_id in [g for g in self._written if self.partition_of(g) == tp]:
            del self._written[group_id]

    async def load(self, tp: TopicPartition) -> dict[str, ShareGroup]:
        """The share groups of one __consumer_offsets partition, replayed from its records."""
        self.forget(tp)
        plog = self._logs.find_log(tp)
        if plog is None:
            return {}
        values: dict[str, dict[RecordKey, bytes]] = {}
        offset, end = plog.log_start_offset, plog.log_end_offset
        while offset < end:
            info = await plog.read(offset, _READ_BYTES)
            if not info.records:
                break
            for header, records in read_records(b"".join(bytes(r) for r in info.records)):
                if header.last_offset >= offset and not header.is_control:
                    for record in records:
                        _replay(values, record)
                offset = max(offset, header.last_offset + 1)
        groups = {}
        for group_id, kept in values.items():
            try:
                group = share_group(group_id, kept)
            except ValueError as exc:
                log.warning("share group %s: unreadable records in %s: %s", group_id, tp, exc)
                continue
            self._written[group_id] = kept
            if group is not None:
                groups[group_id] = group
        return groups


def _replay(values: dict[str, dict[RecordKey, bytes]], record: Record) -> None:
    if record.key is None or len(record.key) < 2 or \
            int.from_bytes(record.key[:2], "big", signed=True) not in SHARE_RECORD_TYPES:
        return
    try:
        key = decode_key(record.key)
    except (ValueError, struct.error, UnicodeDecodeError) as exc:
        log.warning("skipping unreadable share group record at %d: %s", record.offset, exc)
        return
    kept = values.setdefault(key.group, {})
    if record.value is None:
        kept.pop(key, None)
    else:
        kept[key] = record.value


class PersistedGroups:
    """The share coordinator's groups as persisted: loaded with their partition, written after
    each change (a failed write is tried again by retry()). Without a store, nothing is."""

    def __init__(self, groups: dict[str, ShareGroup], store: ShareGroupStore | None,
                 session_timeout_ms: Callable[[str], int], topics: Callable[[], Mapping[str, TopicInfo]],
                 clock_ms: Callable[[], int]) -> None:
        self._groups = groups
        self._store = store
        self._session_timeout_ms = session_timeout_ms
        self._topics = topics
        self._clock_ms = clock_ms
        self._dirty: set[str] = set()
        self._loading: set[TopicPartition] = set()

    def check_loaded(self, group_id: str) -> None:
        if self._store is not None and self._store.partition_of(group_id) in self._loading:
            raise KafkaError(ErrorCode.coordinator_load_in_progress, f"The share group {group_id} is being loaded.")

    def drop(self, tp: TopicPartition) -> None:
        """The partition's groups go (its group coordinator shard moved, or is loaded again)."""
        if self._store is None:
            return
        gone = [g for g in self._groups if self._store.partition_of(g) == tp]
        for group_id in gone:
            del self._groups[group_id]
        self._store.forget(tp)

    async def load(self, tp: TopicPartition) -> None:
        """The groups persisted in one __consumer_offsets partition; their members time out
        unless they heartbeat again, as Kafka schedules their sessions at load."""
        if self._store is None:
            return
        self._loading.add(tp)
        try:
            loaded = await self._store.load(tp)
        finally:
            self._loading.discard(tp)
        for group_id in [g for g in self._groups if self._store.partition_of(g) == tp]:
            del self._groups[group_id]  # stale: from an earlier term of this shard
        now, topics = self._clock_ms(), self._topics()
        for group_id, group in loaded.items():
            for member in group.members.values():
                member.deadline_ms = now + self._session_timeout_ms(group_id)
            group.topics_seen = {n: info for n in group.subscribed_topics() if (info := topics.get(n))}
            self._groups[group_id] = group
        if loaded:
            log.info("loaded %d share groups from %s", len(loaded), tp)

    async def persist(self, group_id: str) -> None:
        """Write what changed of the group (gone from the groups: its tombstones)."""
        if self._store is None:
            return
        try:
            await self._store.persist(group_id, self._groups.get(group_id))
            self._dirty.discard(group_id)
        except KafkaError as exc:
            log.warning("share group %s: could not persist its metadata: %s; trying again", group_id, exc)
            self._dirty.add(group_id)

    async def retry(self) -> None:
        for group_id in list(self._dirty):
            await self.persist(group_id)

    def keys(self, group: ShareGroup) -> list[SharePartitionKey] | None:
        """The group's share-partitions, as its ShareGroupStatePartitionMetadata lists them (None:
        not persisted, so any partition may have state)."""
        if self._store is None or not self._store.has(group.group_id):
            return None
        topics = {t: count for t, (count, _) in group.initializing.items()} | group.initialized
        return [SharePartitionKey(group.group_id, t, p)
                for t, count in sorted(topics.items(), key=lambda t: str(t[0])) for p in range(count)]
