"""This broker's membership of a cluster (docs/cluster.md, "Leadership"): it registers, keeps its
lease with heartbeats, and moves partition leadership to and from itself as balance asks.

Two tasks, so that a slow election (a coordinator loading its shard) never delays a heartbeat:
- heartbeats every cluster.lease.ms / 4; a lease found lapsed means another broker may already
  lead our partitions, so everything is dropped and the broker registers again;
- balancing at the same pace, or at once when woken: by this broker (a topic created, a partition
  lost) or by another one's notice that it joined or released partitions (LISTEN/NOTIFY, so a
  released partition gets its new leader within a round, not a lease / 4 later); each round reads
  a snapshot, then releases, takes, and drops what was lost (balance.plan).
A timer set at each successful heartbeat's send time + the lease drops everything locally even
while the database does not answer, before any other broker can take over: the lease is measured
by the database's clock from a moment after that send.

On election the storage backend opens the log first (it rebuilds producer state at the new
epoch), then the view reports the partition led here, then the listeners (the coordinators) hear
of it (until then the view reports it electing, and the coordinators answer its keys as loading);
on resignation the listeners go first, then the log closes, and only then is the partition
released in the database.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Protocol

from storage.api import BrokerEndpoint, ClusterSnapshot, LeadershipListener, TopicPartition, Unregistered

from ..startup import StartupError
from .balance import plan
from .lease_view import LeaseView, notify

__all__ = ("ClusterMember", "LeaseStore")

log = logging.getLogger(__name__)
_STOP_TIMEOUT_S = 3.0
# Leaving (stop): how long the appends and coordinator writes in flight may still take, and how long
# the heartbeat and balancing tasks are waited for once cancelled.
_LEAVE_GRACE_S = 2.0
_TASKS_END_S = 0.5
# Rounds that were woken early are at least this far apart (wakes come from requests).
_MIN_ROUND_GAP_S = 0.2
# How long after another broker's lease should have run out to look (its row must read lapsed).
_AFTER_EXPIRY_S = 0.05


class LeaseStore(Protocol):
    """storage/pg/cluster_store.py's ClusterStore, as this module uses it."""

    async def register(self, endpoint: BrokerEndpoint) -> bool: ...
    async def heartbeat(self) -> bool: ...
    async def deregister(self) -> None: ...
    async def snapshot(self) -> ClusterSnapshot: ...
    async def unregister(self, node_id: int) -> Unregistered: ...
    async def take(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]: ...
    async def release(self, held: Sequence[tuple[TopicPartition, int]]) -> int: ...
    async def listen(self, callback: Callable[[], None]) -> None: ...
    async def unlisten(self) -> None: ...


class ClusterMember:
    def __init__(self, store: LeaseStore, endpoint: Callable[[], BrokerEndpoint], lease_ms: int,
                 logs: LeadershipListener) -> None:
        self.store = store
        self.view = LeaseView(endpoint().node_id, on_unknown=self.wake, read=store.snapshot,
                              remove=store.unregister)
        self._endpoint = endpoint
        self._lease_s = lease_ms / 1000
        self._interval = self._lease_s / 4
        self._logs = logs  # the storage backend: opens a partition's log on election, closes it
        self._wake = asyncio.Event()
        self._round = asyncio.Lock()  # one round at a time (start's, the task's, a caller's)
        self._registered = False
        self._generation = 0  # bumped on each loss of the lease: elections begun before it are void
        self._deadline: asyncio.TimerHandle | None = None
        self._leave_by: float | None = None  # leaving (stop): writes in flight end by then, not with the lease
        self._tasks: list[asyncio.Task[object]] = []
        self._side_tasks: set[asyncio.Task[object]] = set()
        self._db_down = False
        self._lease_left_ms: Mapping[int, int] = {}

    @property
    def node_id(self) -> int:
        return self.view.node_id

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Register (waiting while an earlier incarnation's lease is live), then take a first share."""
        await self._listen()  # before registering: the others answer the join by releasing
        try:
            # A killed incarnation's lease lapses within one lease; one still renewed after two is
            # another live broker given the same node.id.
            await self._register(give_up_s=2 * self._lease_s + self._interval)
            await self.balance()
        except BaseException:
            await self.store.unlisten()
            raise
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._heartbeats(), name="cluster-heartbeat"),
                       loop.create_task(self._balancing(), name="cluster-balance")]

    async def stop(self) -> None:
        """Leave cleanly: stop serving, release every partition and end the lease, so the other
        brokers take over at once (not after a lease). Bounded when the database does not answer
        (as Kafka's controlled shutdown is): writes in flight get _LEAVE_GRACE_S rather than the
        rest of the lease, the release _STOP_TIMEOUT_S; then the others take over when the lease lapses."""
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            # A heartbeat or round cancelled inside a statement ends only once the database answers
            # asyncpg's cancel request, or the backend cuts the pool off at close: not waited for.
            await asyncio.wait(self._tasks, timeout=_TASKS_END_S)
        self._leave_by = asyncio.get_running_loop().time() + _LEAVE_GRACE_S
        serving = list(self.view.serving)
        epochs = await asyncio.gather(*(self._resign(tp) for tp in serving))  # each log's last snapshot at once
        self._cancel_deadline()
        held = [(tp, epoch) for tp, epoch in zip(serving, epochs, strict=True) if epoch is not None]
        # Not cancelled when out of time: cancelling a statement waits for a database that does not answer.
        leaving = asyncio.get_running_loop().create_task(self._leave(held), name="cluster-leave")
        if (await asyncio.wait({leaving}, timeout=_STOP_TIMEOUT_S))[0]:
            failure = leaving.exception()
        else:
            leaving.add_done_callback(_retrieve)
            failure = TimeoutError(f"no answer within {_STOP_TIMEOUT_S:g} s")
        if failure is not None:  # the others take over once the lease lapses
            log.warning("could not leave the cluster cleanly (%s); other brokers take over when the lease lapses",
                        str(failure) or type(failure).__name__)

    async def _leave(self, held: list[tuple[TopicPartition, int]]) -> None:
        """Release the partitions and end the lease; meanwhile stop listening."""
        async def release() -> None:
            await self.store.release(held)
            await self.store.deregister()
        await asyncio.gather(release(), self.store.unlisten())

    def wake(self) -> None:
        """Balance now (a topic was created, a partition was lost)."""
        self._wake.set()

    def lost(self, tp: TopicPartition) -> None:
        """The backend found itself fenced on tp (another broker leads it at a newer epoch)."""
        self._spawn(self._resign(tp))
        self.wake()

    # -- the lease -----------------------------------------------------------------------------

    async def _register(self, give_up_s: float | None = None) -> None:
        loop = asyncio.get_running_loop()
        began = loop.time()
        while True:
            sent = loop.time()
            if await self.store.register(self._endpoint()):
                break
            if sent == began:
                log.warning("node.id %d is held by an earlier incarnation whose lease is live; waiting up to "
                            "cluster.lease.ms for it to lapse", self.node_id)
            elif give_up_s is not None and sent - began > give_up_s:
                raise StartupError(f"node.id {self.node_id} is held by a live broker that keeps renewing its "
                                   "lease: give every broker of the cluster its own node.id")
            await asyncio.sleep(self._interval)
        self._registered = True
        self._extend(sent)
        log.info("joined the cluster as node %d", self.node_id)

    def _extend(self, sent: float) -> None:
        self._cancel_deadline()
        self._deadline = asyncio.get_running_loop().call_at(sent + self._lease_s, self._lapsed)

    def lease_left_s(self) -> float:
        """Seconds until the lease runs out by this broker's own timer (0 while it holds none; no more
        than the grace left once it is leaving): what a write a request waits for may still take
        (storage/pg/group_commit.py)."""
        if self._deadline is None:
            return 0.0
        ends = self._deadline.when() if self._leave_by is None else min(self._deadline.when(), self._leave_by)
        return max(ends - asyncio.get_running_loop().time(), 0.0)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _lapsed(self) -> None:
        log.warning("node %d's lease lapsed without a heartbeat reaching the database: no longer leading "
                    "its %d partitions", self.node_id, len(self.view.serving))
        self._spawn(self._drop_all())

    async def _drop_all(self) -> None:
        self._registered = False
        self._generation += 1
        self._cancel_deadline()
        await asyncio.gather(*(self._resign(tp) for tp in list(self.view.serving)))

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            sent = asyncio.get_running_loop().time()
            try:
                alive = await self.store.heartbeat()
                if not alive:
                    log.warning("node %d's lease was found lapsed; registering again", self.node_id)
                    await self._drop_all()
                    await self._register()
                    self.wake()
                    continue
            except Exception as exc:
                self._database_down(exc)
                continue
            self._database_back()
            # Alive: also after the timer dropped everything while the database was slow but the
            # lease held; the next round takes our partitions back at new epochs.
            self._registered = True
            self._extend(sent)
            await self._listen()

    async def _listen(self) -> None:
        """Hear the other brokers' notices (again, once the database is back); without them the
        rounds still run, only later."""
        try:
            await self.store.listen(self.wake)
        except Exception as exc:
            self._database_down(exc)

    def _database_down(self, exc: BaseException) -> None:
        if not self._db_down:
            log.warning("cannot reach the cluster database (%s); partitions stay led here until the lease "
                        "lapses", str(exc) or type(exc).__name__)
            self._db_down = True

    def _database_back(self) -> None:
        if self._db_down:
            log.info("the cluster database answers again")
            self._db_down = False

    # -- leadership ----------------------------------------------------------------------------

    async def _balancing(self) -> None:
        while True:
            try:  # asyncio.timeout: Python 3.11's wait_for loses a cancel that comes with the wake
                async with asyncio.timeout(self._next_round_in()):
                    await self._wake.wait()
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                await self.balance()
            except Exception as exc:
                self._database_down(exc)
            await asyncio.sleep(min(_MIN_ROUND_GAP_S, self._interval))

    def _next_round_in(self) -> float:
        """The balancing interval, or sooner: just after another broker's lease would run out, so
        a dead leader's partitions are taken at once rather than up to an interval later."""
        others = [ms for node, ms in self._lease_left_ms.items() if node != self.node_id]
        if not others:
            return self._interval
        return min(self._interval, max(min(others) / 1000, 0) + _AFTER_EXPIRY_S)

    async def balance(self) -> None:
        """One balancing round."""
        async with self._round:
            await self._balance()

    async def _balance(self) -> None:
        snapshot = await self.store.snapshot()
        self.view.update(snapshot)
        self._lease_left_ms = snapshot.lease_left_ms
        if not self._registered:
            return
        moves = plan(self.node_id, self.view.serving, [b.node_id for b in snapshot.brokers], snapshot.partitions)
        for tp in moves.lost:
            log.info("%s is led by another broker now (or gone); no longer serving it", tp)
            await self._resign(tp)
        released = [(tp, epoch) for tp in moves.release if (epoch := await self._resign(tp)) is not None]
        released += moves.disown
        if released:
            await self.store.release(released)
            log.info("handed over %d partitions for balance: %s", len(released), _names(tp for tp, _ in released))
        taken = await self._take(moves.take)
        if taken:
            log.info("now leading %d partitions; took %s", len(self.view.serving), _names(taken))

    async def _take(self, wanted: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Take the partitions and open them. The other brokers name us their leader once the take
        commits, before its answer is back here and while the logs open one by one: meanwhile the
        view reports them electing, and our coordinators answer their shards as loading."""
        if not wanted:
            return {}
        self.view.opening.update(wanted)
        try:
            taken = await self.store.take(wanted)
            self.view.opening.difference_update(set(wanted) - taken.keys())  # another broker's
            for tp, epoch in sorted(taken.items()):
                await self._elect(tp, epoch)
            return taken
        finally:
            self.view.opening.difference_update(wanted)  # a round cut short (cancelled at stop)

    async def _elect(self, tp: TopicPartition, epoch: int) -> None:
        try:
            await self._open(tp, epoch)
        finally:
            self.view.opening.discard(tp)  # the coordinators have heard (or it is not ours)

    async def _open(self, tp: TopicPartition, epoch: int) -> None:
        generation = self._generation
        try:
            await self._logs.on_elected(tp, epoch)
        except Exception as exc:
            log.warning("cannot open %s at leader epoch %d (%s); handing it back", tp, epoch, exc)
            await self.store.release([(tp, epoch)])
            return
        if generation != self._generation:  # the lease lapsed while the log opened
            await notify(self._logs.on_resigned(tp), "resignation", tp)
            return
        self.view.serving[tp] = epoch
        for listener in list(self.view.listeners):
            await notify(listener.on_elected(tp, epoch), "election", tp)

    async def _resign(self, tp: TopicPartition) -> int | None:
        """Stop serving tp here; the epoch it was held at (None if it was not)."""
        epoch = self.view.serving.pop(tp, None)
        if epoch is None:
            return None
        for listener in list(self.view.listeners):
            await notify(listener.on_resigned(tp), "resignation", tp)
        await notify(self._logs.on_resigned(tp), "resignation", tp)
        return epoch

    def _spawn(self, work: Coroutine[object, None, object]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)


def _retrieve(task: asyncio.Task[None]) -> None:
    """The outcome of a leave given up on (already reported): retrieved, so asyncio logs nothing."""
    if not task.cancelled():
        task.exception()


def _names(tps: Iterable[TopicPartition]) -> str:
    names = sorted(str(tp) for tp in tps)
    return ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
