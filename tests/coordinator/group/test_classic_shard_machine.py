"""The classic group as a pure shard (classic_shard.py), driven by a Hypothesis state machine with no
I/O, as Kafka's GroupMetadataManagerTest drives its classic groups: members join with and without
group.instance.id (and the two-step join of KIP-394), leaders and followers sync at the current or a
stale generation, members heartbeat, leave, and miss their session, join and sync deadlines, and a
quarter of the group records fail to be written. Checked at every step: no decision changes the
group; a decision applied after its record was written leaves the group exactly as decided (the
record's replay plus the live state); every parked request is answered once; and replaying every
record written, through the loader's code over encoded __consumer_offsets batches, rebuilds the
group whenever it is Stable."""

from __future__ import annotations

import dataclasses
import itertools

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from kio.schema.errors import ErrorCode

from coordinator.group import classic_shard as classic
from coordinator.group import commands as c
from coordinator.group.classic_shard import ClassicEffect, ClassicResult, Install
from coordinator.group.config import GroupConfig
from coordinator.group.loader import PartitionLoader
from coordinator.group.member import JoinGroupResult, SyncParams
from coordinator.group.metadata import GroupMetadata
from coordinator.group.offset_shard import KeepAlive
from coordinator.group.replay import GroupReplay
from coordinator.group.snapshot import to_value
from coordinator.group.state import GroupState
from protocol.records import build_batch, read_records

from .helpers import params, subscription

S = GroupState
SUB = subscription("t")
PROTOCOLS = [(("range", SUB),), (("roundrobin", SUB), ("range", SUB)), (("roundrobin", SUB),)]
CONFIG = GroupConfig(initial_rebalance_delay_ms=500)
_LIVE = ("state", "generation_id", "protocol_type", "protocol_name", "leader_id", "static_members", "pending_members",
         "pending_sync", "current_state_timestamp", "subscribed_topics", "consumer", "_join_deadline_ms",
         "_initial_delay_remaining_ms", "_new_member_added", "_sync_deadline_ms")


def fingerprint(group: GroupMetadata) -> tuple[object, ...]:
    """Everything a classic decision may change, members in order."""
    members = [(mid, dataclasses.astuple(m)) for mid, m in group.members.items()]
    return (*(getattr(group, name) for name in _LIVE), members)


class ClassicShardMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        counter = itertools.count()
        self.group = GroupMetadata("g", CONFIG, new_member_id=lambda cid: f"{cid}-{next(counter)}")
        self.now = 0
        self.waiters = itertools.count()
        self.outstanding: set[int] = set()
        self.known_ids: list[str] = ["ghost"]
        self.written: list[bytes] = []  # the encoded batches of every record written
        self.replay = GroupReplay({"g": self.group}, lambda gid: self.group, lambda: self.now)

    @initialize(delay=st.sampled_from([0, 0, 500]))
    def initial_delay(self, delay) -> None:  # type: ignore[no-untyped-def]
        self.group.config = GroupConfig(initial_rebalance_delay_ms=delay)

    def _run(self, result: ClassicResult[object], fail: bool) -> object:
        """Apply result as operations.run_classic does on the runtime, the write failing if fail."""
        assert result.decided is not self.group
        if result.records:
            event("record failed" if fail else f"record written: {result.decided and result.decided.state}")
        if result.records and fail:
            effects, follow_up = classic.failed(self.group, result, self.now, ErrorCode.not_coordinator)
            self._deliver(effects)
            if follow_up is not None:
                self._run(follow_up, fail=False)
            return result.response
        applied = classic.written(self.group, result)
        if applied.records:
            records = [record.encode(self.now) for record in applied.records]
            self.written.append(bytes(build_batch(records, base_offset=len(self.written))))
        for record in applied.records:
            self.replay.replay(record)
        self._deliver(applied.effects)
        if result.decided is not None:
            assert fingerprint(self.group) == fingerprint(result.decided), "replay + live state != decided"
        return result.response

    def _decide(self, decide: object, fail: bool) -> object:
        before = fingerprint(self.group)
        assert callable(decide)
        result = decide()
        assert fingerprint(self.group) == before, "a decision changed the live group"
        return self._run(result, fail)

    def _deliver(self, effects: tuple[ClassicEffect, ...]) -> None:
        for effect in effects:
            if isinstance(effect, Install):
                effect.run()
                continue
            if isinstance(effect, KeepAlive):
                member = self.group.members.get(effect.member_id)
                if member is not None:
                    member.schedule_heartbeat(self.now)
                continue
            assert effect.waiter in self.outstanding, f"waiter {effect.waiter} answered twice or never asked"
            self.outstanding.discard(effect.waiter)  # type: ignore[arg-type]
            if isinstance(effect.result, JoinGroupResult) and effect.result.member_id:
                self.known_ids.append(effect.result.member_id)

    def _waiter(self) -> int:
        w = next(self.waiters)
        self.outstanding.add(w)
        return w

    @rule(protocols=st.sampled_from(PROTOCOLS), require_known=st.booleans(),
          instance=st.none() | st.sampled_from(["i1", "i2"]), fail=st.integers(0, 3))
    def join_new(self, protocols, require_known, instance, fail) -> None:  # type: ignore[no-untyped-def]
        p = params(protocols=protocols, require_known=require_known, instance=instance, rebalance=8_000)
        w = self._waiter()
        self._decide(lambda: classic.join(self.group, p, self.now, w), fail == 0)

    @rule(data=st.data(), protocols=st.sampled_from(PROTOCOLS), fail=st.integers(0, 3))
    def join_known(self, data, protocols, fail) -> None:  # type: ignore[no-untyped-def]
        member_id = data.draw(st.sampled_from(self.known_ids))
        member = self.group.members.get(member_id)
        instance = member.group_instance_id if member is not None else None
        p = params(member_id, protocols=protocols, instance=instance, rebalance=8_000)
        w = self._waiter()
        self._decide(lambda: classic.join(self.group, p, self.now, w), fail == 0)

    @rule(data=st.data(), stale=st.booleans(), fail=st.integers(0, 3))
    def sync(self, data, stale, fail) -> None:  # type: ignore[no-untyped-def]
        member_id = data.draw(st.sampled_from(self.known_ids))
        member = self.group.members.get(member_id)
        generation = self.group.generation_id - (1 if stale else 0)
        assignments = {mid: mid.encode() for mid in self.group.members}
        sync = SyncParams(member_id=member_id, generation_id=generation,
                          group_instance_id=member.group_instance_id if member else None, assignments=assignments)
        cmd = c.SyncGroup(group_id="g", params=sync, reply=self._waiter())  # type: ignore[arg-type]
        self._decide(lambda: classic.sync(self.group, cmd, self.now), fail == 0)

    @precondition(lambda self: self.group.state is S.PREPARING_REBALANCE)
    @rule(fail=st.integers(0, 3))
    def members_rejoin(self, fail) -> None:  # type: ignore[no-untyped-def]
        """Every member not yet rejoined rejoins (as live consumers do when told to)."""
        for member in [m for m in self.group.members.values() if not m.is_awaiting_join]:
            p = params(member.member_id, protocols=member.supported_protocols, instance=member.group_instance_id,
                       rebalance=8_000)
            w = self._waiter()
            self._decide(lambda: classic.join(self.group, p, self.now, w), fail == 0)  # noqa: B023

    @precondition(lambda self: self.group.state is S.COMPLETING_REBALANCE)
    @rule(fail=st.integers(0, 3), follower_first=st.booleans())
    def leader_syncs(self, fail, follower_first) -> None:  # type: ignore[no-untyped-def]
        order = sorted(self.group.members, key=lambda mid: self.group.is_leader(mid) != follower_first)
        for member_id in order:
            member = self.group.members.get(member_id)
            if member is None or member.is_awaiting_sync or self.group.state is not S.COMPLETING_REBALANCE:
                continue
            sync = SyncParams(member_id=member_id, generation_id=self.group.generation_id,
                              group_instance_id=member.group_instance_id, protocol_type="consumer",
                              protocol_name=self.group.protocol_name, assignments={m: m.encode() for m in order})
            cmd = c.SyncGroup(group_id="g", params=sync, reply=self._waiter())  # type: ignore[arg-type]
            self._decide(lambda: classic.sync(self.group, cmd, self.now), fail == 0)  # noqa: B023

    @rule(data=st.data(), stale=st.booleans())
    def heartbeat(self, data, stale) -> None:  # type: ignore[no-untyped-def]
        member_id = data.draw(st.sampled_from(self.known_ids))
        generation = self.group.generation_id - (1 if stale else 0)
        code = self._decide(lambda: classic.heartbeat(self.group, member_id, generation, None), False)
        if stale and code is not ErrorCode.unknown_member_id and self.group.state is not S.EMPTY:
            assert code is ErrorCode.illegal_generation

    @rule(data=st.data(), by_instance=st.booleans(), fail=st.integers(0, 3))
    def leave(self, data, by_instance, fail) -> None:  # type: ignore[no-untyped-def]
        member_id = data.draw(st.sampled_from(self.known_ids))
        member = self.group.members.get(member_id)
        instance = member.group_instance_id if member is not None else None
        who = ("", instance) if by_instance and instance else (member_id, instance)
        top, errors = self._decide(lambda: classic.leave(self.group, [who], self.now), fail == 0)  # type: ignore[misc]
        assert top is ErrorCode.none and len(errors) == 1

    @precondition(lambda self: self.group.next_deadline_ms() is not None)
    @rule(fail=st.integers(0, 3))
    def expire_next(self, fail) -> None:  # type: ignore[no-untyped-def]
        deadline = self.group.next_deadline_ms()
        assert deadline is not None
        self.now = max(self.now, deadline)
        self._decide(lambda: classic.expire(self.group, self.now), fail == 0)

    @rule(ms=st.integers(1, 4_000))
    def time_passes(self, ms) -> None:  # type: ignore[no-untyped-def]
        self.now += ms

    @invariant()
    def stable_group_is_rebuilt_by_replay(self) -> None:
        if self.group.state is not S.STABLE:
            return
        groups: dict[str, GroupMetadata] = {}
        loader = PartitionLoader(groups, CONFIG, now_ms=self.now)
        for header, records in read_records(b"".join(self.written)):
            loader.apply_batch(header, records)
        assert to_value(groups["g"]) == to_value(self.group)
        event(f"stable group rebuilt, {min(len(self.group.members), 3)}+ members")
        assert groups["g"].state is S.STABLE

    @invariant()
    def parked_requests_are_outstanding(self) -> None:
        for m in self.group.members.values():
            for w in (m.join_waiter, m.sync_waiter):
                assert w is None or w in self.outstanding


TestClassicShard = ClassicShardMachine.TestCase
TestClassicShard.settings = settings(max_examples=80, stateful_step_count=40, deadline=None)
