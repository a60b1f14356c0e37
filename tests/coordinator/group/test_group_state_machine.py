"""GroupMetadata driven by random join/sync/heartbeat/leave/time steps (hypothesis stateful),
checking the invariants Kafka's GroupMetadata keeps and that every parked request is answered
exactly once or is still parked."""

from __future__ import annotations

import itertools

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from coordinator.group.config import GroupConfig
from coordinator.group.member import Outcome, SyncParams
from coordinator.group.metadata import GroupMetadata
from coordinator.group.state import GroupState
from protocol.errors import KafkaError

from .helpers import params, subscription

S = GroupState
SUB = subscription("t")
PROTOCOLS = [(("range", SUB),), (("roundrobin", SUB), ("range", SUB)), (("roundrobin", SUB),)]


class GroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        counter = itertools.count()
        cfg = GroupConfig(initial_rebalance_delay_ms=500)
        self.group = GroupMetadata("g", cfg, new_member_id=lambda cid: f"{cid}-{next(counter)}")
        self.now = 0
        self.waiters = itertools.count()
        self.outstanding: set[int] = set()
        self.known_ids: list[str] = ["ghost"]
        self.last_generation = 0

    def _apply(self, outcome: Outcome, waiter: int | None = None) -> None:
        if waiter is not None:
            self.outstanding.add(waiter)
        for w, result in outcome.replies:
            assert w in self.outstanding, f"waiter {w} answered twice or never asked"
            self.outstanding.discard(w)
            member_id = getattr(result, "member_id", "")
            if member_id:
                self.known_ids.append(member_id)

    @rule(
        protocols=st.sampled_from(PROTOCOLS),
        require_known=st.booleans(),
        instance=st.none() | st.sampled_from(["i1", "i2"]),
        session=st.sampled_from([6_000, 10_000]),
    )
    def join_new(self, protocols, require_known, instance, session) -> None:  # type: ignore[no-untyped-def]
        w = next(self.waiters)
        p = params(protocols=protocols, require_known=require_known, instance=instance,
                   session=session, rebalance=8_000)
        self._apply(self.group.join(p, self.now, w), w)

    @rule(data=st.data(), protocols=st.sampled_from(PROTOCOLS))
    def join_known(self, data, protocols) -> None:  # type: ignore[no-untyped-def]
        member_id = data.draw(st.sampled_from(self.known_ids))
        member = self.group.members.get(member_id)
        instance = member.group_instance_id if member is not None else None
        w = next(self.waiters)
        p = params(member_id, protocols=protocols, instance=instance, rebalance=8_000)
        self._apply(self.group.join(p, self.now, w), w)

    @rule(data=st.data(), stale=st.booleans())
    def sync(self, data, stale) -> None:  # type: ignore[no-untyped-def]
        member_id = data.draw(st.sampled_from(self.known_ids))
        w = next(self.waiters)
        gen = self.group.generation_id - (1 if stale else 0)
        assignments = {m: b"x" for m in self.group.members}
        member = self.group.members.get(member_id)
        instance = member.group_instance_id if member is not None else None
        outcome = self.group.sync(SyncParams(member_id=member_id, generation_id=gen, group_instance_id=instance,
                                             assignments=assignments), now_ms=self.now, waiter=w)
        self._apply(outcome, w)

    @rule(data=st.data())
    def heartbeat(self, data) -> None:  # type: ignore[no-untyped-def]
        member_id = data.draw(st.sampled_from(self.known_ids))
        member = self.group.members.get(member_id)
        instance = member.group_instance_id if member is not None else None
        try:
            self.group.heartbeat(member_id, self.group.generation_id, instance, self.now)
        except KafkaError:
            pass

    @rule(data=st.data())
    def leave(self, data) -> None:  # type: ignore[no-untyped-def]
        member_id = data.draw(st.sampled_from(self.known_ids))
        _, outcome = self.group.leave([(member_id, None)], self.now)
        self._apply(outcome)

    @rule(step=st.sampled_from([1, 500, 3_000, 6_000, 9_000]))
    def advance(self, step: int) -> None:
        self.now += step
        self._apply(self.group.tick(self.now))

    @invariant()
    def consistent(self) -> None:
        g = self.group
        assert g.generation_id >= self.last_generation
        self.last_generation = g.generation_id
        if g.members:
            assert g.leader_id in g.members
        else:
            assert g.leader_id is None
            assert g.state in (S.EMPTY, S.PREPARING_REBALANCE)
        if g.state is S.EMPTY:
            assert not g.members
        for instance, member_id in g.static_members.items():
            assert g.members[member_id].group_instance_id == instance
        assert g.pending_sync <= set(g.members)
        if g.state in (S.COMPLETING_REBALANCE, S.STABLE):
            assert g.protocol_name is not None and g.generation_id >= 1
            assert all(g.protocol_name in m.protocol_names() for m in g.members.values())
        if g.state is not S.PREPARING_REBALANCE:
            assert not any(m.is_awaiting_join for m in g.members.values())
        if g.state is not S.COMPLETING_REBALANCE:
            assert not any(m.is_awaiting_sync for m in g.members.values())

    @invariant()
    def every_waiter_answered_or_parked(self) -> None:
        parked = {w for m in self.group.members.values() for w in (m.join_waiter, m.sync_waiter)
                  if w is not None}
        assert parked == self.outstanding


GroupMachine.TestCase.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)
test_group_state_machine = GroupMachine.TestCase
