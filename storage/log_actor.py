"""The owner task of one partition log: a queue of typed commands, run one at a time.

Supervision follows aiokafka: when the task ends (close or a crash) every queued command fails
and every later call fails at once, never waiting on a task that is gone. A log that has gone
offline after an I/O error it could not undo answers KAFKA_STORAGE_ERROR to everything.

A group of appends that arrive together is acknowledged only after the work they depend on
(the flush that log.flush.interval.* asks for), which runs on a worker thread: the owner task
waits for it, the event loop does not.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, TypeVar

from protocol.errors import ErrorCode, KafkaError

from .api import AppendOrigin, LogAppendInfo
from .log_messages import AFTER_ACKS, BEFORE_ACKS, CLOSE, AfterAcks, Append, Barrier, BeforeAcks, Close, LogMessage

__all__ = ("Acks", "LogActor", "answer_appends")

log = logging.getLogger(__name__)
T = TypeVar("T")


# Any: each message's reply future has its own T (Future is invariant), set with what _handle
# returned for that message.
_Command = tuple[LogMessage[object], asyncio.Future[Any]]
Acks = list[tuple[asyncio.Future[LogAppendInfo], LogAppendInfo]]  # appends of a group, answered with it


class LogActor:
    """Base of a partition log: subclasses implement _append_command and _before_acks."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._queue: asyncio.Queue[_Command] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._waiters: set[asyncio.Future[None]] = set()
        self._offline: KafkaError | None = None
        self._stopping: asyncio.Future[None] | None = None
        self._last_ran = False  # the command _stop queued last has run: _run may end
        self._running = False  # the owner task is inside a group of commands (maybe awaiting)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"log-{self._name}")
        self._task.add_done_callback(self._on_done)

    async def _stop(self) -> None:
        """Run _last after every queued command, then end the task (once, however many callers)."""
        if self._task is None:
            return
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop_once(self._task))
        await asyncio.shield(self._stopping)

    async def _stop_once(self, task: asyncio.Task[None]) -> None:
        if not task.done() and self._offline is None:
            # Commands queued before this one still run; _put refuses any sent after it, so
            # nothing touches the files once _last has closed them.
            reply: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._queue.put_nowait((CLOSE, reply))
            try:
                await reply
            except KafkaError:
                pass  # went offline meanwhile: the caller closes the files anyway
            if self._last_ran:
                # The appends that ran in last's group may still be being acknowledged (a commit
                # in flight): _run ends by itself once they are, so none is left unanswered.
                await asyncio.wait({task})
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    def _on_done(self, task: asyncio.Task[None]) -> None:
        exc = None if task.cancelled() else task.exception()
        if exc is not None:
            log.error("log actor for %s died: %r", self._name, exc)
        while not self._queue.empty():
            _, reply = self._queue.get_nowait()
            if not reply.done():
                reply.set_exception(self._ended_error())

    def _ended_error(self) -> KafkaError:
        if self._offline is not None:
            return self._offline
        return KafkaError(ErrorCode.not_leader_or_follower, f"{self._name} is closed")

    def _go_offline(self, why: str) -> KafkaError:
        self._offline = KafkaError(ErrorCode.kafka_storage_error, f"{self._name} is offline: {why}")
        log.error("%s: log taken offline: %s; restart the broker once the disk is sound", self._name, why)
        return self._offline

    # -- commands ------------------------------------------------------------------------------

    async def append(self, records: bytes | memoryview, origin: AppendOrigin = AppendOrigin.CLIENT) -> LogAppendInfo:
        appended = self.submit(records, origin)
        return appended if isinstance(appended, LogAppendInfo) else await appended

    def submit(self, records: bytes | memoryview,
               origin: AppendOrigin = AppendOrigin.CLIENT) -> LogAppendInfo | asyncio.Future[LogAppendInfo]:
        """Take an append now, in call order, and answer it once durable: at once (LogAppendInfo)
        when it was written here and nothing is due before its acknowledgement, else a future. A
        caller that submits appends one after another has them sequenced in that order (the
        queue is FIFO, and one is written here only while nothing waits in it), so it can go on
        to its next request while this one waits for its flush or commit. KafkaError now when
        the append is refused before it is queued."""
        if self._idle() and (info := self._append_at_once(records, origin)) is not None:
            # Written in this task while the owner had nothing to do: the same all-or-nothing
            # step the owner would run, without the queue's two event-loop turns per request.
            if self._acks_due():
                return self._acknowledged_after_flush(info)
            self._wake_waiters()
            self._after_acks_soon()
            return info
        reply: asyncio.Future[LogAppendInfo] = asyncio.get_running_loop().create_future()
        self._put((Append(records, origin), reply))
        return reply

    def _acknowledged_after_flush(self, info: LogAppendInfo) -> asyncio.Future[LogAppendInfo]:
        """info's future, answered once BEFORE_ACKS (queued now, behind nothing) has run."""
        reply: asyncio.Future[LogAppendInfo] = asyncio.get_running_loop().create_future()
        flushed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def answer(done: asyncio.Future[None]) -> None:
            if reply.done():
                return
            if done.cancelled():
                reply.set_exception(self._ended_error())
                return
            if (exc := done.exception()) is not None:
                reply.set_exception(exc)
                return
            reply.set_result(info)
            self._wake_waiters()
            self._after_acks_soon()

        flushed.add_done_callback(answer)
        self._put((BEFORE_ACKS, flushed))
        return reply

    async def ask(self, message: LogMessage[T]) -> T:
        """Run message inside the owner task, after everything queued before it; its answer."""
        reply: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._put((message, reply))
        return await reply

    def _idle(self) -> bool:
        """The owner task runs nothing and has nothing queued: the log's state is whole, so a
        read may run right in the caller's task, saving the two event-loop turns through the
        queue that a fetch of a busy partition, or of each of a thousand, would pay."""
        return not self._running and self._offline is None and self._stopping is None and self._queue.empty() \
            and self._task is not None and not self._task.done() and not self._task.cancelling()

    def _put(self, cmd: _Command) -> None:
        if self._offline is not None or self._stopping is not None or (self._task is not None and self._task.done()):
            raise self._ended_error()
        self._queue.put_nowait(cmd)

    def _after_acks_soon(self) -> None:
        """Queue the owner's work that follows acknowledgements (a periodic producer snapshot):
        it runs in the owner task, serialized with the log's other file changes, and no append
        waits for it."""
        if not self._after_acks_due():
            return
        reply: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        reply.add_done_callback(_retrieve)
        try:
            self._put((AFTER_ACKS, reply))
        except KafkaError:
            pass  # closing (its last command snapshots) or offline: nothing to do

    def add_waiter(self, waiter: asyncio.Future[None]) -> None:
        """Wake waiter (set its result) on the next change of the high watermark or LSO."""
        self._waiters.add(waiter)

    def remove_waiter(self, waiter: asyncio.Future[None]) -> None:
        self._waiters.discard(waiter)

    def _wake_waiters(self) -> None:
        waiters, self._waiters = self._waiters, set()
        for w in waiters:
            if not w.done():
                w.set_result(None)

    # -- the owner task ---------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            message, reply = await self._queue.get()
            self._running = True
            acks: Acks = []
            while True:
                await self._execute(message, reply, acks)
                if self._queue.empty():
                    break
                message, reply = self._queue.get_nowait()
            if acks:
                await self._acknowledge(acks)
                self._wake_waiters()
                self._after_acks_soon()
            self._running = False
            if self._last_ran and self._queue.empty():
                return

    async def _execute(self, message: LogMessage[object], reply: asyncio.Future[Any], acks: Acks) -> None:
        if reply.done():
            return
        if self._offline is not None:
            reply.set_exception(self._offline)
            return
        try:
            if type(message) is Append:  # the hot path: answered with its group, after _before_acks
                acks.append((reply, await self._append_command(message.records, message.origin)))
            else:
                await self._before_message(acks)
                reply.set_result(await self._handle(message))
        except Exception as exc:
            if not reply.done():
                reply.set_exception(exc)

    async def _handle(self, message: LogMessage[object]) -> object:
        """Run one message other than an append; each subclass matches its own, then asks its base."""
        match message:
            case BeforeAcks():
                await self._before_acks()
            case AfterAcks():
                await self._after_acks()
            case Close():
                try:
                    await self._last()
                finally:
                    self._last_ran = True
            case Barrier():
                pass
            case _:
                raise TypeError(f"{self._name}: no handler for {message!r}")
        return None

    async def _acknowledge(self, acks: Acks) -> None:
        failed: KafkaError | None = None
        try:
            await self._before_acks()
        except KafkaError as exc:
            failed = exc  # the group's work failed: so did every append it was to make durable
        answer_appends(acks, failed)

    async def _last(self) -> None:
        """The last command before the task ends (close): flush and close, or a last snapshot."""

    async def _append_command(self, records: bytes | memoryview, origin: AppendOrigin) -> LogAppendInfo:
        raise NotImplementedError

    async def _before_message(self, acks: Acks) -> None:
        """Before a message other than an append runs in the owner task (acks: the appends run before
        it in this group, not yet acknowledged)."""

    def _append_at_once(self, records: bytes | memoryview, origin: AppendOrigin) -> LogAppendInfo | None:
        """_append_command when it needs no await (no roll, no remote write), else None."""
        return None

    def _acks_due(self) -> bool:
        """_before_acks has work to do."""
        return True

    async def _before_acks(self) -> None:
        """Work the acknowledgement of a group of appends waits for (a due flush)."""

    def _after_acks_due(self) -> bool:
        """_after_acks has work to do."""
        return False

    async def _after_acks(self) -> None:
        """Work that follows the acknowledgement of appends, which none of them waits for."""


def answer_appends(acks: Acks, failed: KafkaError | None) -> None:
    """Answer each append not answered yet: its info, or failed."""
    for reply, info in acks:
        if reply.done():
            continue
        if failed is None:
            reply.set_result(info)
        else:
            reply.set_exception(failed)


def _retrieve(reply: asyncio.Future[None]) -> None:
    """A reply nobody awaits: its failure (the log went offline) is already reported elsewhere."""
    if not reply.cancelled():
        reply.exception()
