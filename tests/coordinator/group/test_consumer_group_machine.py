"""A RuleBasedStateMachine over ConsumerGroupHeartbeat: clients that do what KIP-848 clients do
(own exactly what the last response assigned, report it on every heartbeat) join, heartbeat and
leave in any order, and topics grow.

Safety: no partition is ever owned by two clients at once (incremental revocation: a partition
reaches its new owner only after its old owner reported it gone). Liveness: once every client has
heartbeated enough times with nothing changing, the group is Stable and every subscribed partition
is owned by exactly one client, the counts differing by at most one (uniform assignor)."""

from __future__ import annotations

import uuid

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from coordinator.group.consumer_group import ConsumerGroup, ConsumerGroupState
from coordinator.group.consumer_heartbeat import ConsumerGroupConfig, HeartbeatRequest, heartbeat, leave

T = uuid.UUID(int=1)
CFG = ConsumerGroupConfig()
NAMES = ("a", "b", "c", "d")


class ConsumerGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.group = ConsumerGroup("g")
        self.partitions = 3
        self.owned: dict[str, frozenset[int]] = {}  # client -> what it owns now
        self.epochs: dict[str, int] = {}

    def topics(self) -> dict[str, tuple[uuid.UUID, int]]:
        return {"t": (T, self.partitions)}

    def _beat(self, name: str, req: HeartbeatRequest) -> None:
        result = heartbeat(self.group, req, self.topics(), CFG, 0)
        self.epochs[name] = result.member_epoch
        if result.assignment is not None:
            # A KIP-848 client revokes what is no longer assigned and takes what is new.
            self.owned[name] = result.assignment.get(T, frozenset())

    @rule(name=st.sampled_from(NAMES))
    def join(self, name: str) -> None:
        if name in self.epochs:
            return
        self.owned[name] = frozenset()
        self._beat(name, HeartbeatRequest(member_id=name, member_epoch=0, rebalance_timeout_ms=1_000,
                                          subscribed_topic_names=("t",), owned={}))

    @precondition(lambda self: bool(self.epochs))
    @rule(data=st.data())
    def beat(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.epochs)))
        self._beat(name, HeartbeatRequest(member_id=name, member_epoch=self.epochs[name],
                                          owned={T: self.owned[name]}))

    @precondition(lambda self: bool(self.epochs))
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.epochs)))
        leave(self.group, HeartbeatRequest(member_id=name, member_epoch=-1), CFG, 0)
        del self.epochs[name], self.owned[name]  # a leaving client has given everything up

    @rule()
    def add_partition(self) -> None:
        if self.partitions < 8:
            self.partitions += 1

    @invariant()
    def no_partition_has_two_owners(self) -> None:
        seen = [p for parts in self.owned.values() for p in parts]
        assert len(seen) == len(set(seen)), self.owned

    @invariant()
    def heartbeating_everyone_converges(self) -> None:
        if not self.epochs:
            return
        saved = (dict(self.owned), dict(self.epochs), self.group.copy())
        for _ in range(4):
            for name in sorted(self.epochs):
                self._beat(name, HeartbeatRequest(member_id=name, member_epoch=self.epochs[name],
                                                  owned={T: self.owned[name]}))
                self.no_partition_has_two_owners()
        assert self.group.state is ConsumerGroupState.STABLE
        counts = sorted(len(p) for p in self.owned.values())
        assert sum(counts) == self.partitions and counts[-1] - counts[0] <= 1, self.owned
        self.owned, self.epochs, self.group = saved


ConsumerGroupMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=30, deadline=None)
TestConsumerGroupMachine = ConsumerGroupMachine.TestCase
