"""The ClusterView of a broker that keeps its log in local segment files: one broker, which leads
every partition at leader epoch 0 and never hands leadership over."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Final

from storage.api import (
    BrokerEndpoint,
    LeadershipListener,
    LogSource,
    PartitionLeader,
    TopicPartition,
    Unregistered,
)

__all__ = ("LOCAL_LEADER_EPOCH", "LocalClusterView")

log = logging.getLogger(__name__)
LOCAL_LEADER_EPOCH: Final = 0


class LocalClusterView:
    def __init__(self, logs: LogSource, endpoint: Callable[[], BrokerEndpoint],
                 node_id: Callable[[], int] | None = None) -> None:
        # endpoint is read on each call: the advertised port is known only once the listener is bound.
        self._logs = logs
        self._endpoint = endpoint
        # Asked twice per partition of every Fetch and Produce: building the endpoint to read it
        # cost a 1,000-partition fetch about 13 % of its time.
        self._node_id = node_id or (lambda: endpoint().node_id)
        self._listeners: list[LeadershipListener] = []
        self._announcing: set[asyncio.Task[None]] = set()

    @property
    def node_id(self) -> int:
        return self._node_id()

    @property
    def leads_everything(self) -> bool:
        return True

    def live_brokers(self) -> list[BrokerEndpoint]:
        return [self._endpoint()]

    def fenced_brokers(self) -> list[BrokerEndpoint]:
        return []

    def leader(self, tp: TopicPartition) -> PartitionLeader | None:
        meta = self._logs.topics.get(tp.topic)
        if meta is None or not 0 <= tp.partition < meta.partitions:
            return None
        return PartitionLeader(self.node_id, LOCAL_LEADER_EPOCH)

    def replicas(self, tp: TopicPartition) -> list[int]:
        return [self.node_id] if self.leader(tp) is not None else []

    def electing(self, tp: TopicPartition) -> bool:
        return False  # every partition is led here from the start

    async def await_leaders(self, partitions: Sequence[TopicPartition], timeout_s: float) -> bool:
        return all(self.leader(tp) is not None for tp in partitions)  # this broker leads them all

    async def unregister(self, node_id: int) -> Unregistered:
        """The one registered broker is this one, which runs."""
        return Unregistered.LIVE if node_id == self.node_id else Unregistered.NOT_REGISTERED

    def partition_states(self, topic: str, partitions: int) -> list[tuple[PartitionLeader | None, list[int]]]:
        meta = self._logs.topics.get(topic)
        exists = 0 if meta is None else min(partitions, meta.partitions)
        node_id = self.node_id
        led = (PartitionLeader(node_id, LOCAL_LEADER_EPOCH), [node_id])
        return [led] * exists + [(None, [])] * (partitions - exists)

    def add_listener(self, listener: LeadershipListener) -> None:
        """Every partition that exists now is announced to the listener (elected at epoch 0), in
        a task: this is called from synchronous start-up code."""
        self._listeners.append(listener)
        partitions = [TopicPartition(m.name, p) for m in list(self._logs.topics.values()) for p in range(m.partitions)]
        task = asyncio.get_running_loop().create_task(self._announce(listener, partitions), name="announce")
        self._announcing.add(task)
        task.add_done_callback(self._announcing.discard)

    async def _announce(self, listener: LeadershipListener, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            try:
                await listener.on_elected(tp, LOCAL_LEADER_EPOCH)
            except Exception:
                log.exception("leadership listener failed on the election of %s", tp)
