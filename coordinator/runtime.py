"""The coordinator runtime: one actor that runs a coordinator's typed messages over its shards.

As Kafka's CoordinatorRuntime and CoordinatorShard (coordinator-common): a shard is a pure state
machine. An operation on it decides and returns a CoordinatorResult (the records to persist, the
response, and the effects to run once the records are durable) without changing anything; the
runtime writes the records, then has the shard replay them (the same replay that loading a
shard at start-up or on election uses), then runs the effects and answers. A write that fails
leaves the shard as it was (revert drops what begin marked as pending). The write returns the log
offset of its first record and each record is one log record, so replay gets each record's own
offset, as Kafka's does (a committed offset remembers the record that holds it); a write that
cannot say returns None. Both coordinators run here: the transaction coordinator's shards
(coordinator/transaction/shard.py) and the group coordinator's (coordinator/group/replay.py).

apply holds the actor until the write is durable; apply_later does not (Kafka's runtime defers
the answer to the write the same way): the records are handed to their logs at once, in decision
order, and the actor serves other messages while they are flushed and committed, so the writes of
many ids share a flush instead of queueing one flush each. The messages of the same key (key_of:
a transactional id) wait for it, so each is still decided on the state its predecessor left.

The runtime owns what every coordinator needs around its shards: the queue of messages served
one at a time by one task (so shard state needs no locks), supervision (a dead actor fails every
waiting caller with COORDINATOR_NOT_AVAILABLE), the periodic timers that queue a message, and the
write path. What a message does is the coordinator's: it gives the runtime an execute function
that matches on the message type.

Errors are one kind of value, ApiError (Kafka's error code and message, as Kafka's ApiError): a
shard returns it as its response, and the runtime turns it into the KafkaError the caller's
handler answers with, here and nowhere else.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Generic, Protocol, TypeVar, cast

from protocol.errors import ErrorCode, KafkaError

from .tasks import DEFAULT_BACKOFF, Backoff, TaskSupervisor
from .timer import CoordinatorTimer

__all__ = ("ApiError", "CoordinatorResult", "CoordinatorRuntime", "Message", "Pending", "Shard", "wall_clock_ms")

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")  # a shard's record
R_contra = TypeVar("R_contra", contravariant=True)
E = TypeVar("E")  # a coordinator's effect
M = TypeVar("M")  # a coordinator's message type
# A result is immutable: one of records, effects and a response of narrower types is one of wider.
R_co = TypeVar("R_co", covariant=True)
E_co = TypeVar("E_co", covariant=True)
T_co = TypeVar("T_co", covariant=True)


@dataclass(frozen=True, slots=True)
class ApiError:
    """A refusal as a value: the error code a response carries and its error_message."""

    code: ErrorCode
    message: str | None = None

    @classmethod
    def of(cls, exc: KafkaError) -> ApiError:
        return cls(exc.code, exc.message)

    def exception(self) -> KafkaError:
        return KafkaError(self.code, self.message)


@dataclass(frozen=True, slots=True, kw_only=True)
class CoordinatorResult(Generic[R_co, E_co, T_co]):
    """What a shard operation decided: persist records, then answer response and run effects
    (Kafka's CoordinatorResult). An ApiError with records is a refusal that still changes state:
    InitProducerId fencing an open transaction answers CONCURRENT_TRANSACTIONS and aborts it."""

    response: T_co | ApiError
    records: tuple[R_co, ...] = ()
    effects: tuple[E_co, ...] = ()


class Shard(Protocol[R_contra]):
    def begin(self, records: Sequence[R_contra]) -> None:
        """The records are being written: mark what they change as pending."""

    def revert(self, records: Sequence[R_contra]) -> None:
        """Their write failed: drop the pending marks, the state stays as it was."""

    def replay(self, record: R_contra, offset: int | None = None) -> None:
        """Apply a persisted record, at offset in its log if known (after a write, and when
        loading the shard)."""


@dataclass(frozen=True, slots=True)
class Message(Generic[T]):
    """Base of a coordinator's typed messages; T is what the caller gets back."""


async def _no_write(records: Sequence[object]) -> int | None:
    raise AssertionError("this coordinator's runtime was given no write")


async def _no_effect(effect: object) -> None:
    raise AssertionError("this coordinator's runtime was given no effects to run")


def wall_clock_ms() -> int:
    """The coordinators' clock unless a test gives its own: milliseconds since the epoch."""
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True, eq=False)
class Pending(Generic[T]):
    """What apply_later gives back while its records are being written: the runtime calls finish
    (replay, effects, the answer) inside the actor once written is done, with its error if any."""

    written: asyncio.Future[None]
    finish: Callable[[BaseException | None], Awaitable[T]]


@dataclass(frozen=True, slots=True)
class _Envelope(Generic[M]):
    message: M
    # None: nobody waits (a timer's), or the message carries its own. Any: each call's future has its
    # own T (Future is invariant), set with what execute returned for that message.
    reply: asyncio.Future[Any] | None
    finish: Pending[Any] | None = None  # set: the message's write is done, finish it


class CoordinatorRuntime(Generic[M, R, E]):
    """The actor. execute runs one message; for messages that batchable() accepts, the ones
    queued back to back run together through execute_batch (OffsetCommits share one append).
    Deadlines (timer) run between messages, before and after each; periodic work (every) is
    queued as a message. on_stopped gets the messages left unserved when the actor ends, to fail
    whatever replies they carry themselves."""

    def __init__(
        self, name: str, execute: Callable[[M], Awaitable[object]], *,
        write: Callable[[Sequence[R]], Awaitable[int | None]] = _no_write,
        run_effect: Callable[[E], Awaitable[None]] = _no_effect,
        execute_batch: Callable[[list[M]], Awaitable[None]] | None = None,
        batchable: Callable[[M], bool] = lambda message: False,
        on_stopped: Callable[[list[M]], None] = lambda messages: None,
        clock_ms: Callable[[], int] = wall_clock_ms,
        backoff: Backoff = DEFAULT_BACKOFF,
        start_write: Callable[[Sequence[R]], asyncio.Future[None] | None] | None = None,
        key_of: Callable[[M], Hashable | None] = lambda message: None,
    ) -> None:
        self.name = name
        self._execute = execute
        self._write = write
        # apply_later's write: hands the records to their logs now, and gives a future for their
        # durability (None: durable already). Without one, apply_later is apply.
        self._start_write = start_write
        self._key_of = key_of
        self._parked: dict[Hashable, deque[_Envelope[M]]] = {}  # key -> messages behind its write
        self._in_flight: dict[int, _Envelope[M]] = {}  # id(pending) -> a message whose write is out
        self._settled = asyncio.Event()  # set while nothing is in flight
        self._settled.set()
        self._run_effect = run_effect
        self._execute_batch = execute_batch
        self._batchable = batchable
        self._on_stopped = on_stopped
        self._clock_ms = clock_ms
        self._queue: asyncio.Queue[_Envelope[M]] = asyncio.Queue()
        self._held: _Envelope[M] | None = None  # taken from the queue behind a batch, served next
        self._task: asyncio.Task[None] | None = None
        self.timer: CoordinatorTimer[M] = CoordinatorTimer()
        self.tasks = TaskSupervisor(name, backoff)  # periodic timers and the coordinator's background work

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)
        self._task.add_done_callback(self._on_done)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        await self.tasks.stop()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def call(self, message: Message[T]) -> T:
        """Queue message and wait for its answer (a KafkaError for a refusal)."""
        if self._task is not None and self._task.done():
            raise KafkaError(ErrorCode.coordinator_not_available, f"{self.name} stopped")
        reply: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Envelope(cast(M, message), reply))
        return await reply

    def submit(self, message: M) -> None:
        """Queue a message that carries its own reply (a parked JoinGroup is answered later)."""
        self._queue.put_nowait(_Envelope(message, None))

    def every(self, what: str, interval_ms: int, make: Callable[[], M]) -> None:
        """Queue make() every interval_ms."""

        async def timer() -> None:
            while True:
                await asyncio.sleep(interval_ms / 1000)
                self._queue.put_nowait(_Envelope(make(), None))

        self.tasks.spawn(what, timer)

    async def apply(self, shard: Shard[R], result: CoordinatorResult[R, E, T]) -> T:
        """Persist the result's records, replay them into shard, run its effects, and answer:
        the one place a shard's decision becomes state and an ApiError becomes a KafkaError."""
        base = None
        if result.records:
            shard.begin(result.records)
            try:
                base = await self._write(result.records)
            except BaseException:
                shard.revert(result.records)
                raise
        return await self._finish_apply(shard, result, None, base)

    async def apply_later(self, shard: Shard[R], result: CoordinatorResult[R, E, T]) -> T | Pending[T]:
        """apply without holding the actor for the write (module doc): Pending while the records
        are being written, for the message's execute to return; the answer at once when nothing
        is written or the write was durable on the spot."""
        if not result.records or self._start_write is None:
            return await self.apply(shard, result)
        shard.begin(result.records)
        try:
            written = self._start_write(result.records)
        except BaseException:
            shard.revert(result.records)
            raise
        finish = partial(self._finish_apply, shard, result)
        return await finish(None) if written is None else Pending(written, finish)

    async def _finish_apply(self, shard: Shard[R], result: CoordinatorResult[R, E, T],
                            error: BaseException | None, base: int | None = None) -> T:
        if error is not None:
            shard.revert(result.records)
            raise error
        for position, record in enumerate(result.records):
            shard.replay(record, None if base is None else base + position)
        for effect in result.effects:
            await self._run_effect(effect)
        if isinstance(result.response, ApiError):
            raise result.response.exception()
        return result.response

    # -- the owner task ------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            batch = await self._next()
            # Deadlines due first: a message arriving late must see the expiry.
            await self._fire_due()
            if batch and batch[0].finish is not None:
                await self._finish(batch[0], batch[0].finish)
            elif batch and self._execute_batch is not None and self._batchable(batch[0].message):
                await self._serve_batch(batch)
            elif batch:
                await self._serve(batch[0])
            await self._fire_due()

    async def _next(self) -> list[_Envelope[M]]:
        """The next message (none if a deadline comes first), with the batchable ones queued right
        behind a batchable one. The first other message waits for the next turn, so every
        message is still served in arrival order."""
        if self._held is not None:
            first, self._held = self._held, None
        elif not self._queue.empty():
            first = self._queue.get_nowait()  # busy: no wait to arm a timeout for
        else:
            deadline = self.timer.next_deadline_ms()
            timeout = None if deadline is None else max(deadline - self._clock_ms(), 0) / 1000
            try:  # asyncio.timeout: Python 3.11's wait_for loses a cancel (stop) that comes with a message
                async with asyncio.timeout(timeout):
                    first = await self._queue.get()
            except TimeoutError:
                return []
        batch = [first]
        while first.finish is None and self._batchable(first.message) and not self._queue.empty():
            following = self._queue.get_nowait()
            if following.finish is not None or not self._batchable(following.message):
                self._held = following
                break
            batch.append(following)
        return batch

    async def _serve(self, envelope: _Envelope[M]) -> None:
        key = self._key_of(envelope.message)
        if key is not None and key in self._parked:
            self._parked[key].append(envelope)  # its key's write is out: decided once that is done
            return
        try:
            result = await self._execute(envelope.message)
        except Exception as exc:
            self._answer_error(envelope, exc)
            return
        if isinstance(result, Pending):
            self._wait_for(envelope, key, result)
        elif envelope.reply is not None and not envelope.reply.done():
            envelope.reply.set_result(result)

    def _answer_error(self, envelope: _Envelope[M], exc: Exception) -> None:
        if envelope.reply is None:
            log.error("%s: %s failed", self.name, type(envelope.message).__name__, exc_info=exc)
        elif not envelope.reply.done():
            envelope.reply.set_exception(exc)

    def _wait_for(self, envelope: _Envelope[M], key: Hashable | None, pending: Pending[Any]) -> None:
        """Park the key's next messages until pending's write is done, then queue its finish."""
        if key is not None:
            self._parked[key] = deque()
        self._in_flight[id(pending)] = envelope
        self._settled.clear()
        pending.written.add_done_callback(lambda _: self._queue.put_nowait(replace(envelope, finish=pending)))

    async def _finish(self, envelope: _Envelope[M], pending: Pending[Any]) -> None:
        """In the actor: finish the message whose write is done, then serve what its key parked."""
        written = pending.written
        error = (KafkaError(ErrorCode.coordinator_not_available, f"{self.name}: the write was cancelled")
                 if written.cancelled() else written.exception())
        try:
            result = await pending.finish(error)
        except Exception as exc:
            self._answer_error(envelope, exc)
        else:
            if envelope.reply is not None and not envelope.reply.done():
                envelope.reply.set_result(result)
        finally:
            self._in_flight.pop(id(pending), None)
        key = self._key_of(envelope.message)
        for parked in self._parked.pop(key, ()) if key is not None else ():
            await self._serve(parked)  # the first that writes again parks the ones behind it
        if not self._in_flight:
            self._settled.set()

    async def settled(self) -> None:
        """Wait (outside the actor) until no write of apply_later is out (quiesce, shutdown)."""
        await self._settled.wait()

    async def _serve_batch(self, batch: list[_Envelope[M]]) -> None:
        assert self._execute_batch is not None
        try:
            await self._execute_batch([envelope.message for envelope in batch])
        except Exception:
            log.exception("%s: %d %s failed", self.name, len(batch), type(batch[0].message).__name__)

    async def _fire_due(self) -> None:
        for message in self.timer.pop_due(self._clock_ms()):
            await self._serve(_Envelope(message, None))

    def _on_done(self, task: asyncio.Task[None]) -> None:
        # Supervision: nobody may wait forever on a dead actor.
        exc = None if task.cancelled() else task.exception()
        if exc is not None:
            log.error("%s died: %r", self.name, exc, exc_info=exc)
        left = [] if self._held is None else [self._held]
        self._held = None
        while not self._queue.empty():
            queued = self._queue.get_nowait()
            if queued.finish is None:
                left.append(queued)
        left += [*self._in_flight.values(), *(e for parked in self._parked.values() for e in parked)]
        self._in_flight.clear()
        self._parked.clear()
        self._settled.set()
        error = KafkaError(ErrorCode.coordinator_not_available, f"{self.name} stopped")
        for envelope in left:
            if envelope.reply is not None and not envelope.reply.done():
                envelope.reply.set_exception(error)
        self._on_stopped([envelope.message for envelope in left])
