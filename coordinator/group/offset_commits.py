"""One OffsetCommit or TxnOffsetCommit between its decision and its acknowledgement.

The actor decides a commit (who may commit, which metadata is too large) before anything is
written; what is left to write becomes a PendingCommit. Its records go to __consumer_offsets,
alone or in one batch with the commits queued behind it (operations.py), and only once they are
in the log does apply() make the offsets visible, as Kafka's coordinator replays its own records.
"""

from __future__ import annotations

from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from protocol.records import Record
from storage.api import TopicPartition

from . import commands as c
from .log import offset_commit_record
from .metadata import GroupMetadata
from .offsets import OffsetAndMetadata

__all__ = ("PendingCommit",)


@dataclass(slots=True, kw_only=True)
class PendingCommit:
    cmd: c.CommitOffsets
    group: GroupMetadata | None  # None: refused before a group was looked up or created
    # Stamped with the commit's time, waiting for their records' positions.
    offsets: dict[TopicPartition, OffsetAndMetadata]
    # Each partition's answer so far: the refused ones, then the written ones.
    result: dict[TopicPartition, ErrorCode]

    @classmethod
    def refused(cls, cmd: c.CommitOffsets, group: GroupMetadata | None, error: ErrorCode) -> PendingCommit:
        return cls(cmd=cmd, group=group, offsets={}, result=dict.fromkeys(cmd.offsets, error))

    def records(self, now: int) -> list[Record]:
        return [offset_commit_record(self.cmd.group_id, tp, value, timestamp=now)
                for tp, value in self.offsets.items()]

    def apply(self, record_offset: int) -> int:
        """Records written from record_offset on, in offsets' order: commit them (or hold a
        transaction's pending) and answer NONE. Returns the offset after the last."""
        assert self.group is not None
        written = {}
        for tp, value in self.offsets.items():
            written[tp] = value.at(record_offset)
            record_offset += 1
        txn = self.cmd.producer
        if txn is None:
            self.group.offsets.commit(written)
        else:
            self.group.offsets.add_pending(txn.producer_id, written)
        self.result |= dict.fromkeys(written, ErrorCode.none)
        return record_offset

    def fail(self, error: ErrorCode) -> None:
        self.result |= dict.fromkeys(self.offsets, error)
