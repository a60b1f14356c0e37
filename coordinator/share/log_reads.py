"""What a share-partition reads from its topic's log: batch headers only, never records.

`read_batches` lists the stored batches from an offset with whether their records may be
delivered: control batches never are, and under read_committed neither are the batches of aborted
transactions, found as a consumer finds them (an aborted transaction's producer is aborted from
its first offset until its control batch), so a read_committed share group archives them unseen.
`batches_covering` gathers the stored bytes a ShareFetch returns for acquired offsets: whole
batches, as Kafka returns them (the client keeps only the acquired records).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from protocol.record_batch import iter_batches
from storage.api import IsolationLevel, PartitionLog

from .partition_state import AcquiredRange, LogBatch

__all__ = ("LogRead", "batches_covering", "read_batches")


@dataclass(slots=True)
class LogRead:
    batches: list[LogBatch] = field(default_factory=list)
    # (base offset, last offset, bytes) of each batch read, to answer with
    raw: list[tuple[int, int, memoryview]] = field(default_factory=list)


async def read_batches(plog: PartitionLog, offset: int, max_bytes: int, isolation: IsolationLevel) -> LogRead:
    """Batches from the one holding offset up to the high watermark (LSO for read_committed)."""
    info = await plog.read(offset, max_bytes, isolation)
    aborted = sorted(info.aborted_transactions or (), key=lambda a: a.first_offset)
    active: set[int] = set()  # producers inside an aborted transaction at this point of the log
    out = LogRead()
    for chunk in info.records:
        view = memoryview(chunk)
        for pos, header in iter_batches(view, verify_crc=False):
            while aborted and aborted[0].first_offset <= header.last_offset:
                active.add(aborted.pop(0).producer_id)
            deliverable = not header.is_control and not (header.is_transactional and header.producer_id in active)
            if header.is_control:
                active.discard(header.producer_id)
            out.batches.append(LogBatch(header.base_offset, header.last_offset, deliverable))
            out.raw.append((header.base_offset, header.last_offset, view[pos:pos + header.size]))
    return out


async def batches_covering(plog: PartitionLog, ranges: Sequence[AcquiredRange], known: LogRead,
                           max_bytes: int) -> list[memoryview]:
    """The stored batches holding the acquired offsets, in offset order, each once: those already
    read, and for offsets outside them (records acquired again) more reads."""
    found: dict[int, memoryview] = {}
    _keep(found, known.raw, ranges)
    low, high = (known.raw[0][0], known.raw[-1][1]) if known.raw else (0, -1)
    outside = [r for r in ranges if not (low <= r.first_offset and r.last_offset <= high)]
    offset = min((r.first_offset for r in outside), default=0)
    last_needed = max((r.last_offset for r in outside), default=-1)
    while offset <= last_needed:
        read = await read_batches(plog, offset, max_bytes, IsolationLevel.READ_UNCOMMITTED)
        if not read.raw or read.raw[-1][1] < offset:
            break
        _keep(found, read.raw, ranges)
        offset = read.raw[-1][1] + 1
    return [found[base] for base in sorted(found)]


def _keep(found: dict[int, memoryview], raw: Sequence[tuple[int, int, memoryview]],
          ranges: Sequence[AcquiredRange]) -> None:
    for base, last, data in raw:
        if any(r.first_offset <= last and base <= r.last_offset for r in ranges):
            found[base] = data
