"""The answers of one connection, in request order, some of them not ready yet.

Kafka's clients expect a connection's answers in the order of its requests. A Produce is answered
once its batches are durable -- in cluster mode after its flush is stored and committed, many
milliseconds -- but it is handed to its partitions' logs as soon as it is read, and they sequence
appends in the order they come (its handler returns a Later, broker/handler.py). So the request
loop goes on to the producer's next Produce while this one waits here: a producer with five
requests in flight has them all in the same flush or the next, instead of one flush each. The
answers still leave strictly in request order: one that is ready waits behind the ones before it.

Only Produce requests are pipelined: any other request waits until every answer before it has
left (drained), so it is handled exactly as if the connection handled one request at a time (an
EndTxn, a Fetch or a Metadata after a Produce sees that Produce done, as on Kafka, which mutes a
connection until its answer is sent). The pipeline is bounded (MAX_PIPELINED answers waiting);
then the loop waits for room, and the framing stops reading once its frame queue is full.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Final

from protocol.errors import KafkaError

from ..handler import Later
from .closes import Close
from .requests import Response, ResponseWriter

__all__ = ("MAX_PIPELINED", "Answers")

# Answers waiting at most, as Kafka's producers keep max.in.flight.requests.per.connection <= 5
# with idempotence: room for those, and for a few answers behind them.
MAX_PIPELINED: Final = 8


class Answers:
    def __init__(self, writer: ResponseWriter, close: Close) -> None:
        self._writer = writer
        self._close = close
        self._queue: deque[Later | Response | None] = deque()
        self._changed: asyncio.Future[None] | None = None
        self.lost = False

    @property
    def waiting(self) -> int:
        """Answers not written yet (the first of them not ready)."""
        return len(self._queue)

    def add(self, answer: Later | Response | None) -> None:
        """The answer of the request just handled, after those of every request before it."""
        queue = self._queue
        if isinstance(answer, asyncio.Future):
            if answer.done() and not queue:
                self._settle(answer)
                return
            queue.append(answer)
            answer.add_done_callback(self._advance)
        elif queue:
            queue.append(answer)
        elif answer is not None and not self.lost:
            self._writer.send(answer)

    def _advance(self, _: object = None) -> None:
        """Write the answers at the head that are ready (a Later that finished wakes this)."""
        queue = self._queue
        while queue:
            head = queue[0]
            if isinstance(head, asyncio.Future):
                if not head.done():
                    break
                queue.popleft()
                self._settle(head)
            else:
                queue.popleft()
                if head is not None and not self.lost:
                    self._writer.send(head)
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)

    def _settle(self, later: Later) -> None:
        if later.cancelled():
            self._close("its request's answer was cancelled", logging.ERROR)
        elif (exc := later.exception()) is not None:  # CloseConnection (acks=0), or a bug
            self._close(f"{exc}", logging.WARNING if isinstance(exc, KafkaError) else logging.ERROR)
        elif (answer := later.result()) is not None and not self.lost:
            self._writer.send(answer)

    async def room(self) -> None:
        """Until fewer than MAX_PIPELINED answers wait (or the connection is gone)."""
        while len(self._queue) >= MAX_PIPELINED and not self.lost:
            await self._change()

    async def drained(self) -> None:
        """Until every answer has been written (or the connection is gone)."""
        while self._queue and not self.lost:
            await self._change()

    async def _change(self) -> None:
        if self._changed is None or self._changed.done():
            self._changed = asyncio.get_running_loop().create_future()
        await self._changed

    def connection_lost(self) -> None:
        """Nothing is written any more; answers still finishing are dropped as they come (their
        requests were sequenced and go on, as Kafka finishes a request whose connection went)."""
        self.lost = True
        self._writer.transport = None
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)
