"""The ClusterView of a broker in cluster mode: the last snapshot of the database's brokers and
partition leases, with what this broker serves itself laid over it (ClusterMember keeps both).

A partition is reported as led here only while this broker serves it: its log is open at the
epoch it took. A row that names this node without that (left from an earlier incarnation, or a
lease that lapsed) reads as leaderless until this broker takes it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

from storage.api import (
    BrokerEndpoint,
    ClusterSnapshot,
    LeadershipListener,
    PartitionLeader,
    PartitionLease,
    TopicPartition,
    Unregistered,
)

__all__ = ("LeaseView", "notify")

log = logging.getLogger(__name__)
_LOOK_AGAIN_S = 0.025


class LeaseView:
    def __init__(self, node_id: int, on_unknown: Callable[[], None] = lambda: None,
                 read: Callable[[], Awaitable[ClusterSnapshot]] | None = None,
                 remove: Callable[[int], Awaitable[Unregistered]] | None = None) -> None:
        self._node_id = node_id
        # Asked about a partition the last snapshot lacks (a topic just created): look again now.
        self._on_unknown = on_unknown
        # A fresh snapshot from the database, for await_leaders (ClusterMember's store).
        self._read = read
        # Removes a fenced broker's registration from the database (ClusterMember's store).
        self._remove = remove
        self._updates = 0  # snapshots applied: an older read finishing late is not applied
        self._brokers: list[BrokerEndpoint] = []
        self._fenced: list[BrokerEndpoint] = []
        self._rows: dict[TopicPartition, PartitionLease] = {}
        self.serving: dict[TopicPartition, int] = {}  # partition -> the leader epoch we hold
        self.opening: set[TopicPartition] = set()  # taken in the database, log not open yet
        self.listeners: list[LeadershipListener] = []
        self._announcing: set[asyncio.Task[None]] = set()

    @property
    def node_id(self) -> int:
        return self._node_id

    @property
    def leads_everything(self) -> bool:
        return False

    def update(self, snapshot: ClusterSnapshot) -> None:
        self._updates += 1
        self._brokers = list(snapshot.brokers)
        self._fenced = list(snapshot.fenced)
        self._rows = {p.tp: p for p in snapshot.partitions}

    @property
    def rows(self) -> Mapping[TopicPartition, PartitionLease]:
        return self._rows

    def live_brokers(self) -> list[BrokerEndpoint]:
        return list(self._brokers)

    def fenced_brokers(self) -> list[BrokerEndpoint]:
        """Registered, lease lapsed: a broker killed or shut down stays registered (its row is
        kept, as Kafka keeps a fenced broker's registration) until it registers again."""
        return list(self._fenced)

    def leader(self, tp: TopicPartition) -> PartitionLeader | None:
        epoch = self.serving.get(tp)
        if epoch is not None:
            return PartitionLeader(self._node_id, epoch)
        row = self._rows.get(tp)
        if row is None:
            self._on_unknown()
            return None
        return PartitionLeader(row.leader if row.leader != self._node_id else -1, row.leader_epoch)

    def electing(self, tp: TopicPartition) -> bool:
        return tp in self.opening

    async def await_leaders(self, partitions: Sequence[TopicPartition], timeout_s: float) -> bool:
        """Reads the database's leases again every _LOOK_AGAIN_S (the balancing rounds run at least
        0.2 s apart) until each partition has a live leader or timeout_s passes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not self._all_led(partitions):
            if self._read is None or loop.time() >= deadline:
                return False
            await asyncio.sleep(min(_LOOK_AGAIN_S, max(deadline - loop.time(), 0)))
            before = self._updates
            try:
                snapshot = await self._read()
            except Exception as exc:  # the database is away: the balancing rounds say so
                log.debug("could not read the leases while waiting for leaders: %r", exc)
                continue
            if self._updates == before:
                self.update(snapshot)
        return True

    def _all_led(self, partitions: Sequence[TopicPartition]) -> bool:
        live = {b.node_id for b in self._brokers} | {self._node_id}
        for tp in partitions:
            if tp in self.serving:
                continue
            row = self._rows.get(tp)
            if row is None or row.leader < 0 or row.leader == self._node_id or row.leader not in live:
                return False
        return True

    async def unregister(self, node_id: int) -> Unregistered:
        """In the database, then here at once: the next snapshot would say the same."""
        if self._remove is None:
            return Unregistered.LIVE if node_id == self._node_id else Unregistered.NOT_REGISTERED
        outcome = await self._remove(node_id)
        if outcome is Unregistered.REMOVED:
            self._fenced = [b for b in self._fenced if b.node_id != node_id]
        return outcome

    def replicas(self, tp: TopicPartition) -> list[int]:
        """The leader, then other live brokers, up to the replication factor: with shared storage
        any live broker can lead the partition at once."""
        return self._replicas(self.leader(tp), self._rows.get(tp), {})

    def _replicas(self, leader: PartitionLeader | None, row: PartitionLease | None,
                  known: dict[tuple[int, int], list[int]]) -> list[int]:
        if leader is None or row is None:
            return [leader.leader] if leader is not None and leader.leader >= 0 else []
        key = (leader.leader, row.replication_factor)
        replicas = known.get(key)  # a topic's partitions share a few leaders: each list made once
        if replicas is None:
            first = [leader.leader] if leader.leader >= 0 else []
            others = [b.node_id for b in self._brokers if b.node_id != leader.leader]
            replicas = known[key] = (first + others)[:max(row.replication_factor, len(first))]
        return replicas

    def partition_states(self, topic: str, partitions: int) -> list[tuple[PartitionLeader | None, list[int]]]:
        known: dict[tuple[int, int], list[int]] = {}
        states = []
        for p in range(partitions):
            tp = TopicPartition(topic, p)
            leader = self.leader(tp)
            states.append((leader, self._replicas(leader, self._rows.get(tp), known)))
        return states

    def add_listener(self, listener: LeadershipListener) -> None:
        """Registered for every later election; what is served now is announced in a task (this is
        called from synchronous start-up code)."""
        self.listeners.append(listener)
        served = list(self.serving.items())
        if served:
            task = asyncio.get_running_loop().create_task(self._announce(listener, served), name="announce")
            self._announcing.add(task)
            task.add_done_callback(self._announcing.discard)

    async def _announce(self, listener: LeadershipListener, served: list[tuple[TopicPartition, int]]) -> None:
        for tp, epoch in served:
            if self.serving.get(tp) == epoch:  # not resigned meanwhile
                await notify(listener.on_elected(tp, epoch), "election", tp)


async def notify(call: Awaitable[None], what: str, tp: TopicPartition) -> None:
    """A listener's failure is logged, never allowed to stop leadership moving."""
    try:
        await call
    except Exception:
        log.exception("leadership listener failed on the %s of %s", what, tp)
