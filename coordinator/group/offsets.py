"""Committed offsets of one group, plus the transactional offsets still waiting for their marker.

Kafka keeps both inside GroupMetadata (offsets, pendingTransactionalOffsetCommits); they are
apart here so the transaction coordinator's path can be read and tested on its own.

- A plain OffsetCommit is applied with commit() once its record is in __consumer_offsets.
- A TxnOffsetCommit is appended as a transactional record and held with add_pending() under its
  producer id. complete_txn() applies it when the COMMIT marker is written, or drops it on ABORT.
  A pending offset never shadows a committed one, so OffsetFetch keeps returning the last
  committed offset; with require_stable (KIP-447) it answers UNSTABLE_OFFSET_COMMIT instead.
- Every value remembers record_offset, its position in __consumer_offsets. A transaction's offsets
  only replace committed ones written earlier in the log, as Kafka's olderThan() check does, so a
  plain commit that landed after the transactional record wins.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from storage.api import TopicPartition

__all__ = ("OffsetAndMetadata", "OffsetStore")


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetAndMetadata:
    committed_offset: int
    committed_leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0
    # Only records written with OffsetCommitValue v1 carry one; it overrides retention.
    expire_timestamp: int | None = None
    # Offset of the record in __consumer_offsets; None before it is appended.
    record_offset: int | None = None

    # The two copies every commit makes (spelled out: dataclasses.replace takes ~1 us more each).
    def stamped(self, commit_timestamp: int, expire_timestamp: int | None) -> OffsetAndMetadata:
        return OffsetAndMetadata(committed_offset=self.committed_offset,
                                 committed_leader_epoch=self.committed_leader_epoch, metadata=self.metadata,
                                 commit_timestamp=commit_timestamp, expire_timestamp=expire_timestamp)

    def at(self, record_offset: int) -> OffsetAndMetadata:
        return OffsetAndMetadata(committed_offset=self.committed_offset,
                                 committed_leader_epoch=self.committed_leader_epoch, metadata=self.metadata,
                                 commit_timestamp=self.commit_timestamp, expire_timestamp=self.expire_timestamp,
                                 record_offset=record_offset)

    def older_than(self, other: OffsetAndMetadata) -> bool:
        if self.record_offset is None or other.record_offset is None:
            return True
        return self.record_offset < other.record_offset


class OffsetStore:
    def __init__(self) -> None:
        self._committed: dict[TopicPartition, OffsetAndMetadata] = {}
        self._pending_txn: dict[int, dict[TopicPartition, OffsetAndMetadata]] = {}

    # -- reading ---------------------------------------------------------------------------------

    def get(self, tp: TopicPartition) -> OffsetAndMetadata | None:
        return self._committed.get(tp)

    @property
    def committed(self) -> Mapping[TopicPartition, OffsetAndMetadata]:
        return self._committed

    @property
    def pending(self) -> Mapping[int, Mapping[TopicPartition, OffsetAndMetadata]]:
        """Each producer's transactional offsets waiting for its marker."""
        return self._pending_txn

    def __len__(self) -> int:
        return len(self._committed)

    def has_offsets(self) -> bool:
        """True if anything is committed or pending: such a group must not be removed."""
        return bool(self._committed) or bool(self._pending_txn)

    def is_pending(self, tp: TopicPartition) -> bool:
        return any(tp in offsets for offsets in self._pending_txn.values())

    # -- writing ---------------------------------------------------------------------------------

    def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Apply a plain commit whose records are durable."""
        self._committed.update(offsets)

    def add_pending(
        self, producer_id: int, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> None:
        """Hold a transaction's offsets until its marker; a later TxnOffsetCommit overwrites."""
        self._pending_txn.setdefault(producer_id, {}).update(offsets)

    def complete_txn(
        self, producer_id: int, commit: bool
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Apply (commit) or drop (abort) a producer's pending offsets; return the applied."""
        pending = self._pending_txn.pop(producer_id, {})
        if not commit:
            return {}
        applied = {}
        for tp, value in pending.items():
            current = self._committed.get(tp)
            if current is None or current.older_than(value):
                self._committed[tp] = value
                applied[tp] = value
        return applied

    def delete(self, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        """Remove offsets (an offset tombstone): the committed ones, and any transaction's pending
        ones of the same partitions, as Kafka's replay of a tombstone does; return the committed
        ones removed."""
        removed = []
        for tp in partitions:
            if self._committed.pop(tp, None) is not None:
                removed.append(tp)
            for producer_id, offsets in list(self._pending_txn.items()):
                if offsets.pop(tp, None) is not None and not offsets:
                    del self._pending_txn[producer_id]
        return removed

    def expired(
        self,
        now_ms: int,
        retention_ms: int,
        *,
        base_timestamp: int | None = None,
        keep_topics: Collection[str] = (),
    ) -> list[TopicPartition]:
        """The committed offsets older than retention_ms (their tombstones remove them).

        base_timestamp is when the group became Empty (if known); otherwise each offset's own
        commit timestamp counts. Offsets of keep_topics and partitions with a pending
        transactional commit are never expired; an offset written with an explicit expire
        timestamp (OffsetCommitValue v1) expires at that time.
        """
        return [
            tp
            for tp, value in self._committed.items()
            if tp.topic not in keep_topics
            and not self.is_pending(tp)
            and _is_expired(value, now_ms, retention_ms, base_timestamp)
        ]


def _is_expired(
    value: OffsetAndMetadata, now_ms: int, retention_ms: int, base_timestamp: int | None
) -> bool:
    if value.expire_timestamp is not None:
        return now_ms >= value.expire_timestamp
    base = value.commit_timestamp if base_timestamp is None else base_timestamp
    return now_ms - base >= retention_ms
