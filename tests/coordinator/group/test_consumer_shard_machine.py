"""A consumer group (KIP-848) driven as a pure shard with no I/O, as Kafka's GroupMetadataManagerTest
drives consumerGroupHeartbeat: members join, heartbeat at their epoch and at stale ones, change
their subscriptions over three topics, leave (epoch -1, a static member -2 and back with a new
member id), time passes and sessions and rebalance timeouts expire, and a quarter of the writes
fail. A decision must change nothing; a failed write leaves the group as it was; what a written
decision leaves equals what the change does to the group directly; the members are what a small
model of the clients says; and replaying every written record from empty rebuilds the same group,
from the record values and through the __consumer_offsets batches the loader reads."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from kio.schema.errors import ErrorCode

from coordinator.group.config import GroupConfig
from coordinator.group.consumer_group import ConsumerGroup
from coordinator.group.consumer_heartbeat import ConsumerGroupConfig, HeartbeatRequest, expire, heartbeat, leave
from coordinator.group.consumer_member import ConsumerGroupMember
from coordinator.group.consumer_persist import ConsumerRecord
from coordinator.group.consumer_shard import ConsumerResult, Timers, apply, decide, postpone, replay
from coordinator.group.loader import PartitionLoader
from coordinator.group.metadata import GroupMetadata
from coordinator.runtime import ApiError
from protocol.records import build_batch, read_records

T = TypeVar("T")
SESSION_MS, REBALANCE_MS = 1_000, 400
CFG = ConsumerGroupConfig(session_timeout_ms=SESSION_MS, heartbeat_interval_ms=100)
TOPICS = {"a": (uuid.UUID(int=1), 2), "b": (uuid.UUID(int=2), 3), "c": (uuid.UUID(int=3), 1)}
SUBSCRIPTIONS = st.sets(st.sampled_from(sorted(TOPICS)), min_size=1, max_size=3).map(lambda s: tuple(sorted(s)))
NAMES = st.sampled_from(["m1", "m2", "m3", "s1"])  # s1 is a static member (instance id "i1")
FAIL = st.sampled_from([False, False, False, True])


@dataclass
class Client:
    """What a KIP-848 client knows: its member id, epoch, subscription and owned partitions."""

    member_id: str
    epoch: int
    topics: tuple[str, ...]
    owned: dict[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    deadline: int = 0  # its session's end, as of its last answered heartbeat
    away: bool = False  # a static member that left with epoch -2


def durable(group: ConsumerGroup) -> tuple[object, ...]:
    """What the records carry (members compared with every held partition's assignment epoch)."""
    return (group.group_epoch, group.assignment_epoch, {m: _norm(v) for m, v in group.members.items()},
            {m: dict(t) for m, t in group.target.items()}, dict(group.partition_epochs))


def everything(group: ConsumerGroup) -> tuple[object, ...]:
    return (*durable(group), dict(group.subscription_metadata), dict(group.session_deadlines),
            dict(group.rebalance_deadlines), dict(group.classic_deadlines))


def _norm(m: ConsumerGroupMember) -> ConsumerGroupMember:
    epochs = {t: {p: m.assignment_epochs.get(t, {}).get(p, m.member_epoch) for p in ps}
              for held in (m.assigned, m.pending_revocation)
              for t, ps in held.items()}
    return replace(m, assignment_epochs=epochs)


class ConsumerShardMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.group = ConsumerGroup("g")
        self.now = 0
        self.clients: dict[str, Client] = {}
        self.written: list[list[ConsumerRecord]] = []  # each successful write's records
        self.incarnation = 0

    # -- the actor's part: decide, write (or fail), replay ----------------------------------------

    def _run(self, change: Callable[[ConsumerGroup], T], fail: bool) -> T | ApiError | None:
        """Decide, then write and apply unless the write fails; None when it failed."""
        before, reference = everything(self.group), self.group.copy()
        result: ConsumerResult[T] = decide(self.group, change)
        assert everything(self.group) == before, "a decision changed the group"
        if isinstance(result.response, ApiError):
            assert not result.records
            return result.response
        assert [type(e) for e in result.effects] == [Timers]
        if fail and result.records:
            return None  # nothing replayed: the group stays as it was
        if result.records:  # the actor appends only when there is something to write
            self.written.append(list(result.records))
        apply(self.group, result)
        change(reference)  # the change done directly ends where the replayed records do
        assert durable(self.group) == durable(reference)
        assert everything(self.group) == everything(reference)
        return result.response

    def _beat(self, name: str, req: HeartbeatRequest, fail: bool) -> ApiError | None:
        now = self.now
        answer = self._run(lambda g: heartbeat(g, req, TOPICS, CFG, now), fail)
        if answer is None or isinstance(answer, ApiError):
            return answer
        client = self.clients.setdefault(name, Client(answer.member_id, answer.member_epoch, ()))
        client.member_id, client.epoch, client.deadline = answer.member_id, answer.member_epoch, now + SESSION_MS
        client.away = False
        if req.subscribed_topic_names is not None:
            client.topics = req.subscribed_topic_names
        if answer.assignment is not None:
            client.owned = dict(answer.assignment)
        return None

    # -- rules ---------------------------------------------------------------------------------

    @rule(name=NAMES, topics=SUBSCRIPTIONS, fail=FAIL)
    def join(self, name: str, topics: tuple[str, ...], fail: bool) -> None:
        known = self.clients.get(name)
        self.incarnation += 1
        static = name == "s1"
        member_id = f"{name}-{self.incarnation}" if static or known is None else known.member_id
        req = HeartbeatRequest(member_id=member_id, member_epoch=0, rebalance_timeout_ms=REBALANCE_MS,
                               subscribed_topic_names=topics, owned={}, instance_id="i1" if static else None)
        held = static and known is not None and not known.away and known.member_id in self.group.members
        error = self._beat(name, req, fail)
        if held:  # the instance id is still another incarnation's
            assert error is not None and error.code is ErrorCode.unreleased_instance_id
        else:
            assert error is None

    @precondition(lambda self: bool(self.clients))
    @rule(data=st.data(), fail=FAIL)
    def beat(self, data: st.DataObject, fail: bool) -> None:
        name = data.draw(st.sampled_from(sorted(self.clients)))
        client = self.clients[name]
        req = HeartbeatRequest(member_id=client.member_id, member_epoch=client.epoch, owned=dict(client.owned),
                               instance_id="i1" if name == "s1" else None)
        error = self._beat(name, req, fail)
        if client.member_id in self.group.members and not client.away:
            assert error is None or error.code is ErrorCode.fenced_member_epoch, error
        elif error is None and fail is False:
            raise AssertionError(f"{client.member_id} is not a member but its heartbeat was answered")

    @precondition(lambda self: bool(self.clients))
    @rule(data=st.data(), topics=SUBSCRIPTIONS, fail=FAIL)
    def change_subscription(self, data: st.DataObject, topics: tuple[str, ...], fail: bool) -> None:
        name = data.draw(st.sampled_from(sorted(self.clients)))
        client = self.clients[name]
        req = HeartbeatRequest(member_id=client.member_id, member_epoch=client.epoch, owned=dict(client.owned),
                               subscribed_topic_names=topics, instance_id="i1" if name == "s1" else None)
        epoch = self.group.group_epoch
        if self._beat(name, req, fail) is None and not fail and topics != client.topics:
            assert self.group.group_epoch > epoch  # a new subscription bumps the group epoch

    @precondition(lambda self: bool(self.clients))
    @rule(data=st.data(), ahead=st.sampled_from([1, 5]), fail=FAIL)
    def stale_beat(self, data: st.DataObject, ahead: int, fail: bool) -> None:
        """An epoch the coordinator never gave the member is fenced, and changes nothing."""
        name = data.draw(st.sampled_from(sorted(self.clients)))
        client = self.clients[name]
        req = HeartbeatRequest(member_id=client.member_id, member_epoch=client.epoch + ahead, owned={},
                               instance_id="i1" if name == "s1" else None)
        before = everything(self.group)
        error = self._beat(name, req, fail)
        assert error is not None and error.code in (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id)
        assert everything(self.group) == before

    @precondition(lambda self: bool(self.clients))
    @rule(data=st.data(), fail=FAIL)
    def leave(self, data: st.DataObject, fail: bool) -> None:
        name = data.draw(st.sampled_from(sorted(self.clients)))
        client = self.clients[name]
        static = name == "s1" and data.draw(st.booleans())
        req = HeartbeatRequest(member_id=client.member_id, member_epoch=-2 if static else -1,
                               instance_id="i1" if name == "s1" else None)
        now = self.now
        was_member = client.member_id in self.group.members
        answer = self._run(lambda g: leave(g, req, CFG, now), fail)
        if answer is None:
            return
        if not was_member:
            assert isinstance(answer, ApiError) and answer.code is ErrorCode.unknown_member_id
            return
        assert not isinstance(answer, ApiError), answer
        if static:
            client.away, client.deadline = True, now + SESSION_MS
            assert self.group.members[client.member_id].member_epoch == -2
        else:
            del self.clients[name]
            assert client.member_id not in self.group.members

    @rule(ms=st.sampled_from([100, 300, 700, 1_200]), fail=FAIL)
    def time_passes(self, ms: int, fail: bool) -> None:
        """The actor's timer: fence whoever's session or rebalance timeout passed."""
        self.now += ms
        now = self.now
        session_over = {mid for mid, d in self.group.session_deadlines.items() if d <= now}
        rebalance_over = {mid for mid, (d, _) in self.group.rebalance_deadlines.items() if d <= now}
        before = set(self.group.members)
        gone = self._run(lambda g: expire(g, TOPICS, now), fail)
        if gone is None:
            postpone(self.group, now, now + 500)  # as the actor does after a failed fencing write
            return
        assert not isinstance(gone, ApiError)
        assert session_over <= set(gone) <= session_over | rebalance_over
        assert set(self.group.members) == before - set(gone)
        for name, client in list(self.clients.items()):
            if client.member_id in gone:
                del self.clients[name]

    # -- invariants -------------------------------------------------------------------------------

    @invariant()
    def members_are_the_clients(self) -> None:
        # A member the coordinator still has but whose client gave up (fenced) is allowed: it is
        # fenced again by its session; every client's member is there until its session ends.
        for client in self.clients.values():
            if client.deadline > self.now:
                assert client.member_id in self.group.members, (client, self.now)
                member = self.group.members[client.member_id]
                assert member.subscribed_topic_names == client.topics
        for mid, member in self.group.members.items():
            assert mid in self.group.session_deadlines
            assert member.member_epoch <= self.group.group_epoch

    @invariant()
    def a_partition_has_one_holder(self) -> None:
        held = [(t, p) for m in self.group.members.values() for a in (m.assigned, m.pending_revocation)
                for t, ps in a.items() for p in ps]
        assert len(held) == len(set(held))
        assert set(held) == set(self.group.partition_epochs)

    @invariant()
    def replay_from_empty_rebuilds_the_group(self) -> None:
        fresh = ConsumerGroup("g")
        for records in self.written:
            for record in records:
                replay(fresh, record)
        assert durable(fresh) == durable(self.group)

    @invariant()
    def loading_the_bytes_rebuilds_the_group(self) -> None:
        groups: dict[str, GroupMetadata] = {}
        loader = PartitionLoader(groups, GroupConfig(), now_ms=0)
        data, base = b"", 0
        for records in self.written:
            data += bytes(build_batch([r.encode(0) for r in records], base_offset=base))
            base += len(records)
        for header, batch in read_records(data):
            loader.apply_batch(header, batch)
        loaded = groups["g"].consumer if "g" in groups else None
        assert durable(loaded or ConsumerGroup("g")) == durable(self.group)


# Each step replays the whole log twice: runs of 25 steps keep it to seconds on a loaded machine.
TestConsumerShard = ConsumerShardMachine.TestCase
TestConsumerShard.settings = settings(max_examples=80, stateful_step_count=25, deadline=None)
