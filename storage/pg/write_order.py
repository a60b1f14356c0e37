"""Two writes of one partition in flight at once, committed in their order.

A partition's leader hands its next group of appends to the committer while the previous one's
flush and commit are still running (storage/pg/partition_log.py), so a producer with several
requests in flight is sequenced without waiting a commit per request. Each PartitionWrite names
the write it follows (`after`), and expects the next offset that write leaves. The fence takes
one row per partition, and checks the next offset the database holds, so:

- writes of one partition that land in one group become one write (the first one's expected
  offset, the last one's next offset, the batches end to end) and get the same answer;
- a write whose predecessor is in an earlier group waits for it to be answered before its
  statement runs (its object may be stored meanwhile); if that one was not committed (failed,
  unknown, or fenced) this one is not written and gets the same answer, so nothing is written
  after a gap and the leader re-reads its state from the database before it sequences again.

Groups are taken from the queue one after another, so a write's predecessor is never in a later
group and no two groups wait for each other.
"""

from __future__ import annotations

import asyncio
import dataclasses
from functools import partial
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:  # group_commit.py runs these
    from .group_commit import PartitionWrite, Queued

__all__ = ("after_predecessors", "coalesce")


def coalesce(group: list[Queued]) -> list[Queued]:
    """group with the writes of one partition that follow each other joined into one."""
    joined: list[Queued] = []
    position: dict[asyncio.Future[bool], int] = {}
    for write, reply in group:
        i = position.get(write.after) if write.after is not None else None
        if i is None:
            position[reply] = len(joined)
            joined.append((write, reply))
            continue
        first, first_reply = joined[i]
        joined[i] = (_join(first, write), first_reply)
        position[reply] = i
        first_reply.add_done_callback(partial(_answer_as, reply))
    return joined


def _join(first: PartitionWrite, then: PartitionWrite) -> PartitionWrite:
    return dataclasses.replace(first, next_offset=then.next_offset, batches=first.batches + then.batches,
                               aborted=first.aborted + then.aborted)


async def after_predecessors(group: list[Queued]) -> list[Queued]:
    """The writes of group to commit, once each one's predecessor is answered; the others are
    answered as their predecessor was."""
    waiting = {w.after for w, _ in group if w.after is not None and not w.after.done()}
    if waiting:
        await asyncio.wait(waiting)
    ready: list[Queued] = []
    for write, reply in group:
        if write.after is None or _committed(write.after):
            ready.append((write, reply))
        else:
            _answer_as(reply, write.after)
    return ready


def _committed(reply: asyncio.Future[bool]) -> bool:
    return not reply.cancelled() and reply.exception() is None and reply.result()


def _answer_as(reply: asyncio.Future[bool], before: asyncio.Future[bool]) -> None:
    """Answer reply as before was answered (before is done)."""
    if reply.done():
        return
    if before.cancelled():
        reply.set_exception(KafkaError(ErrorCode.kafka_storage_error,
                                       "the broker stopped before the append was written; retry"))
    elif (exc := before.exception()) is not None:
        reply.set_exception(exc)
    else:
        reply.set_result(before.result())
