"""A ClusterView whose leaders a test sets by hand (the seam's contract, no database): brokers
that share one LogManager stand in for brokers that share one PostgreSQL."""

from __future__ import annotations

from storage.api import BrokerEndpoint, LeadershipListener, PartitionLeader, TopicPartition


class StaticClusterView:
    def __init__(self, node_id: int, leaders: dict[TopicPartition, PartitionLeader] | None = None,
                 default: PartitionLeader | None = None) -> None:
        self._node_id = node_id
        self.leaders = dict(leaders or {})
        self.default = default
        self.brokers = [BrokerEndpoint(n, "127.0.0.1", 9000 + n) for n in (1, 2, 3)]
        self.listeners: list[LeadershipListener] = []
        self.opening: set[TopicPartition] = set()  # elected here, log still opening

    @property
    def node_id(self) -> int:
        return self._node_id

    @property
    def leads_everything(self) -> bool:
        return False

    def live_brokers(self) -> list[BrokerEndpoint]:
        return list(self.brokers)

    def leader(self, tp: TopicPartition) -> PartitionLeader | None:
        return self.leaders.get(tp, self.default)

    def electing(self, tp: TopicPartition) -> bool:
        return tp in self.opening

    def add_listener(self, listener: LeadershipListener) -> None:
        self.listeners.append(listener)
