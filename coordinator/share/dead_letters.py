"""Dead letters of share groups (KIP-1191, share.version 2), as Kafka 4.4's ShareGroupDLQStateManager.

A record a member REJECTs, or one whose delivery count reached share.delivery.count.limit, is
ARCHIVING (partition_state.py) while its group has a dead-letter topic (the group config
errors.deadletterqueue.topic.name). One record per offset goes to that topic, in partition
(source partition mod the topic's partition count), with the record's time of writing and the
headers __dlq.errors.topic, .partition, .offset, .group, .delivery.count and .message (why: Kafka's
"Offset rejected by client." or "Offset delivery count exceeded the threshold."), all UTF-8
text. Key and value are null unless the group sets errors.deadletterqueue.copy.record.enable; then
they are the original record's (its headers are not copied, as in Kafka).

The topic must not start with "__", must start with the broker's
errors.deadletterqueue.topic.name.prefix (default "dlq.", "" for any name) and must have the topic
config errors.deadletterqueue.group.enable=true. A missing one is created, with that config and
message.timestamp.type=CreateTime, only if errors.deadletterqueue.auto.create.topics.enable is true.
When one of these fails, DeadLetterTopicError says which with Kafka's message; the caller logs it
and archives the records without dead letters, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from protocol.records import Record, build_batch, read_records
from storage.api import AppendOrigin, LogSource, PartitionLog, TopicPartition

from .partition_state import DeadLetterRange

__all__ = ("CLIENT_REJECT", "DELIVERY_COUNT_EXCEEDED", "DLQ_ENABLE_CONFIG", "DeadLetterSettings",
           "DeadLetterSource", "DeadLetterTopicError", "DeadLetterWriter")

DLQ_ENABLE_CONFIG: Final = "errors.deadletterqueue.group.enable"
CLIENT_REJECT: Final = "Offset rejected by client."
DELIVERY_COUNT_EXCEEDED: Final = "Offset delivery count exceeded the threshold."
_BATCH_RECORDS: Final = 500
_READ_BYTES: Final = 1 << 20


class DeadLetterTopicError(Exception):
    """The group's dead-letter topic cannot be used (Kafka's ConfigException messages)."""


@dataclass(frozen=True, slots=True)
class DeadLetterSettings:
    """The broker's errors.deadletterqueue.* settings (dynamic in Kafka: read at each use)."""

    topic_name_prefix: str = "dlq."
    auto_create_topics: bool = False
    num_partitions: int = 1


@dataclass(frozen=True, slots=True)
class DeadLetterSource:
    """Where the dead letters come from: the group, the source partition and its topic's name."""

    group_id: str
    tp: TopicPartition
    dlq_topic: str
    copy_record: bool


class DeadLetterWriter:
    def __init__(self, logs: LogSource, settings: Callable[[], DeadLetterSettings],
                 clock_ms: Callable[[], int]) -> None:
        self._logs = logs
        self._settings = settings
        self._clock_ms = clock_ms

    async def write(self, source: DeadLetterSource, ranges: Sequence[DeadLetterRange]) -> None:
        """Append every offset's dead letter; returns once they are in the topic's log."""
        plog = await self._topic_log(source)
        originals = await self._originals(source, ranges) if source.copy_record else {}
        now = self._clock_ms()
        letters = [_letter(source, offset, r, originals.get(offset), now)
                   for r in ranges for offset in range(r.first_offset, r.last_offset + 1)]
        for i in range(0, len(letters), _BATCH_RECORDS):
            await plog.append(bytes(build_batch(letters[i:i + _BATCH_RECORDS])), AppendOrigin.CLIENT)

    async def _topic_log(self, source: DeadLetterSource) -> PartitionLog:
        group, name = source.group_id, source.dlq_topic
        settings = self._settings()
        if not name:
            raise DeadLetterTopicError(f"Configured DLQ topic name in share group: {group} is empty.")
        if name.startswith("__"):
            raise DeadLetterTopicError(
                f"Configured DLQ topic name in share group: {group} cannot start with __, topic: {name}.")
        prefix = settings.topic_name_prefix
        if prefix and not name.startswith(prefix):
            raise DeadLetterTopicError("Configured DLQ topic name does not comply with the DLQ topic prefix in "
                                       f"share group: {group}, topic: {name}, prefix: {prefix}.")
        meta = self._logs.topics.get(name)
        if meta is not None and meta.configs.get(DLQ_ENABLE_CONFIG, "false").lower() != "true":
            raise DeadLetterTopicError(
                f"DLQ is not enabled on configured DLQ topic for share group: {group}, topic: {name}.")
        if meta is None and not settings.auto_create_topics:
            raise DeadLetterTopicError("DLQ topic does not exist and auto create is disabled on cluster for "
                                       f"share group: {group}, topic: {name}.")
        if meta is None:
            meta = await self._logs.create_topic(name, settings.num_partitions, {
                DLQ_ENABLE_CONFIG: "true", "message.timestamp.type": "CreateTime"})
        return self._logs.get_log(TopicPartition(name, source.tp.partition % meta.partitions))

    async def _originals(self, source: DeadLetterSource, ranges: Sequence[DeadLetterRange]) -> dict[int, Record]:
        """The source records still in the log (a deleted one's dead letter has no key or value)."""
        plog = self._logs.find_log(source.tp)
        out: dict[int, Record] = {}
        if plog is None:
            return out
        for r in ranges:
            offset = max(r.first_offset, plog.log_start_offset)
            while offset <= r.last_offset:
                info = await plog.read(offset, _READ_BYTES)
                if not info.records:
                    break
                before = offset
                for header, records in read_records(b"".join(bytes(m) for m in info.records)):
                    out.update((rec.offset, rec) for rec in records if r.first_offset <= rec.offset <= r.last_offset)
                    offset = max(offset, header.last_offset + 1)
                if offset == before:
                    break
        return out


def _letter(source: DeadLetterSource, offset: int, dead: DeadLetterRange, original: Record | None,
            now_ms: int) -> Record:
    headers = (
        ("__dlq.errors.topic", source.tp.topic.encode()),
        ("__dlq.errors.partition", str(source.tp.partition).encode()),
        ("__dlq.errors.offset", str(offset).encode()),
        ("__dlq.errors.group", source.group_id.encode()),
        ("__dlq.errors.delivery.count", str(dead.delivery_count).encode()),
        ("__dlq.errors.message", (CLIENT_REJECT if dead.rejected else DELIVERY_COUNT_EXCEEDED).encode()),
    )
    key = original.key if original is not None else None
    value = original.value if original is not None else None
    return Record(timestamp=now_ms, key=key, value=value, headers=headers)
