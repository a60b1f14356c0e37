"""ConsumerGroupHeartbeat on a ConsumerGroup (KIP-848), pure: epochs, incremental revocation,
static members, regex subscriptions, fencing and session expiry; time is an argument."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from kio.schema.errors import ErrorCode

from coordinator.group.consumer_group import ConsumerGroup, ConsumerGroupState
from coordinator.group.consumer_heartbeat import (
    ConsumerGroupConfig,
    HeartbeatRequest,
    HeartbeatResult,
    expire,
    heartbeat,
    leave,
    validate,
)
from coordinator.group.consumer_member import MemberState
from protocol.errors import KafkaError

T, U = uuid.UUID(int=7), uuid.UUID(int=8)
TOPICS = {"t": (T, 4), "u": (U, 2), "__consumer_offsets": (uuid.UUID(int=9), 3)}
CFG = ConsumerGroupConfig(session_timeout_ms=45_000)


def join(group: ConsumerGroup, member: str, now: int = 0, topics: dict = TOPICS, **extra: object) -> HeartbeatResult:
    fields: dict[str, object] = {"member_id": member, "member_epoch": 0, "rebalance_timeout_ms": 30_000,
                                 "subscribed_topic_names": ("t",), "owned": {}}
    fields.update(extra)
    req = HeartbeatRequest(**fields)  # type: ignore[arg-type]
    validate(group.group_id, req, CFG)
    return heartbeat(group, req, topics, CFG, now)


def beat(group: ConsumerGroup, member: str, epoch: int, owned: dict | None, now: int = 0,
         topics: dict = TOPICS) -> HeartbeatResult:
    return heartbeat(group, HeartbeatRequest(member_id=member, member_epoch=epoch, owned=owned), topics, CFG, now)


def error(fn, *args, **kwargs) -> ErrorCode:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaError) as exc:
        fn(*args, **kwargs)
    return exc.value.code


def test_first_member_gets_every_partition_at_epoch_one() -> None:
    g = ConsumerGroup("g")
    r = join(g, "a")
    assert (r.member_epoch, r.assignment, r.heartbeat_interval_ms) == (1, {T: frozenset(range(4))}, 5_000)
    assert g.state is ConsumerGroupState.STABLE and (g.group_epoch, g.assignment_epoch) == (1, 1)


def test_a_partition_moves_only_after_its_old_owner_revoked_it() -> None:
    g = ConsumerGroup("g")
    join(g, "a")
    rb = join(g, "b")
    # b is at the new epoch but gets nothing yet: a still holds every partition.
    assert rb.member_epoch == 2 and rb.assignment == {}
    assert g.members["b"].state is MemberState.UNRELEASED_PARTITIONS
    assert g.state is ConsumerGroupState.RECONCILING
    ra = beat(g, "a", 1, {T: frozenset(range(4))})
    # a must first revoke two partitions; its epoch stays until it does.
    assert ra.member_epoch == 1 and len(ra.assignment[T]) == 2
    revoked = frozenset(range(4)) - ra.assignment[T]
    assert beat(g, "b", 2, {}).assignment is None  # still unreleased: a has not confirmed yet
    ra = beat(g, "a", 1, {T: ra.assignment[T]})
    assert ra.member_epoch == 2
    rb = beat(g, "b", 2, {})
    assert rb.assignment == {T: revoked}
    assert g.state is ConsumerGroupState.STABLE


def test_leaving_hands_the_partitions_to_the_others() -> None:
    g = ConsumerGroup("g")
    join(g, "a")
    join(g, "b")
    ra = beat(g, "a", 1, {T: frozenset(range(4))})
    beat(g, "a", 1, {T: ra.assignment[T]})
    beat(g, "b", 2, {})
    assert leave(g, HeartbeatRequest(member_id="b", member_epoch=-1), CFG, 0).member_epoch == -1
    ra = beat(g, "a", 2, {T: ra.assignment[T]})
    assert ra.member_epoch == 3 and ra.assignment == {T: frozenset(range(4))}


def test_stale_and_future_epochs_are_fenced_and_unknown_members_told_so() -> None:
    g = ConsumerGroup("g")
    join(g, "a")
    assert error(beat, g, "a", 5, {}) == ErrorCode.fenced_member_epoch
    join(g, "b")
    beat(g, "a", 1, {T: frozenset(range(4))})
    assert error(beat, g, "nobody", 1, {}) == ErrorCode.unknown_member_id


def test_a_lost_response_is_forgiven_with_the_previous_epoch() -> None:
    g = ConsumerGroup("g")
    join(g, "a")
    join(g, "b")
    ra = beat(g, "a", 1, {T: frozenset(range(4))})
    ra = beat(g, "a", 1, {T: ra.assignment[T]})
    assert ra.member_epoch == 2
    # The response with epoch 2 was lost: epoch 1 with a subset of the assignment is accepted.
    assert beat(g, "a", 1, {T: ra.assignment[T]}).member_epoch == 2
    assert error(beat, g, "a", 1, {T: frozenset(range(4))}) == ErrorCode.fenced_member_epoch


def test_a_missed_session_fences_the_member() -> None:
    g = ConsumerGroup("g")
    join(g, "a", now=0)
    join(g, "b", now=40_000)
    assert expire(g, TOPICS, 44_999) == []
    assert expire(g, TOPICS, 45_000) == ["a"]
    assert list(g.members) == ["b"] and g.group_epoch == 3
    assert beat(g, "b", 2, {}, now=45_000).assignment == {T: frozenset(range(4))}


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced() -> None:
    g = ConsumerGroup("g")
    join(g, "a", rebalance_timeout_ms=1_000)
    join(g, "b", now=10)
    beat(g, "a", 1, {T: frozenset(range(4))}, now=20)  # asked to revoke at 20
    assert g.members["a"].state is MemberState.UNREVOKED_PARTITIONS
    assert expire(g, TOPICS, 1_019) == []
    assert expire(g, TOPICS, 1_020) == ["a"]


def test_static_member_leaving_for_a_while_keeps_its_partitions_for_its_next_incarnation() -> None:
    g = ConsumerGroup("g")
    join(g, "a", instance_id="i1")
    r = leave(g, HeartbeatRequest(member_id="a", member_epoch=-2, instance_id="i1"), CFG, 0)
    assert r.member_epoch == -2 and g.members["a"].assigned == {T: frozenset(range(4))}
    epoch = g.group_epoch
    r = join(g, "a2", instance_id="i1")
    assert r.assignment == {T: frozenset(range(4))} and "a" not in g.members
    assert g.group_epoch == epoch  # same subscription: the others are not rebalanced
    assert error(beat, g, "a", 1, {}) == ErrorCode.unknown_member_id


def test_a_second_static_member_with_the_same_instance_id_is_refused() -> None:
    g = ConsumerGroup("g")
    join(g, "a", instance_id="i1")
    assert error(join, g, "b", instance_id="i1") == ErrorCode.unreleased_instance_id
    req = HeartbeatRequest(member_id="b", member_epoch=1, instance_id="i1", owned={})
    assert error(heartbeat, g, req, TOPICS, CFG, 0) == ErrorCode.fenced_instance_id


def test_regex_subscription_matches_topics_created_later() -> None:
    g = ConsumerGroup("g")
    r = join(g, "a", subscribed_topic_names=None, subscribed_topic_regex="t|v.*")
    assert r.assignment == {T: frozenset(range(4))}
    v = uuid.UUID(int=10)
    r = beat(g, "a", 1, {T: frozenset(range(4))}, topics=TOPICS | {"v1": (v, 1)})
    assert r.member_epoch == 2 and r.assignment == {T: frozenset(range(4)), v: frozenset({0})}


def test_regex_subscription_matches_internal_topics_as_kafka_does() -> None:
    # Kafka 4.x resolves a regex against every topic name (franz-go's Test848RegexBrokerResolves
    # subscribes to __consumer_offsets by regex and expects it assigned); a client that wants
    # them left out says so in its pattern
    g = ConsumerGroup("g")
    r = join(g, "a", subscribed_topic_names=None, subscribed_topic_regex="__consumer_offsets")
    assert r.assignment == {uuid.UUID(int=9): frozenset(range(3))}


@pytest.mark.parametrize("pattern", ["t(?=x)", r"(t)\1", "t*+", r"\Z"])
def test_a_regex_re2j_refuses_is_refused_though_python_reads_it(pattern: str) -> None:
    # Kafka 4.x compiles SubscribedTopicRegex with RE2/J: no lookaround, backreferences,
    # possessive quantifiers or \Z
    req = HeartbeatRequest(member_id="a", member_epoch=0, rebalance_timeout_ms=1, subscribed_topic_names=None,
                           subscribed_topic_regex=pattern, owned={})
    assert error(validate, "g", req, CFG) == ErrorCode.invalid_regular_expression


def test_a_regex_is_read_as_re2j_reads_it() -> None:
    # \d is ASCII in RE2/J (Python's re would match the Arabic-Indic digit too), and \Q...\E
    # quotes a literal dot
    g = ConsumerGroup("g")
    arabic, dotted = uuid.UUID(int=11), uuid.UUID(int=12)
    topics = TOPICS | {"t\u0663": (arabic, 1), "a.b": (dotted, 1), "axb": (uuid.UUID(int=13), 1)}
    r = join(g, "a", subscribed_topic_names=None, subscribed_topic_regex=r"t\d|\Qa.b\E", topics=topics)
    assert r.assignment == {dotted: frozenset({0})}


def test_more_partitions_bump_the_group_epoch() -> None:
    g = ConsumerGroup("g")
    join(g, "a")
    r = beat(g, "a", 1, {T: frozenset(range(4))}, topics=TOPICS | {"t": (T, 6)})
    assert r.member_epoch == 2 and r.assignment == {T: frozenset(range(6))}


def test_the_most_requested_assignor_is_used() -> None:
    g = ConsumerGroup("g")
    join(g, "a", server_assignor="range", subscribed_topic_names=("t", "u"))
    join(g, "b", server_assignor="range", subscribed_topic_names=("t", "u"))
    assert g.target == {"a": {T: frozenset({0, 1}), U: frozenset({0})}, "b": {T: frozenset({2, 3}), U: frozenset({1})}}


@pytest.mark.parametrize("change,code", [
    ({"rebalance_timeout_ms": -1}, ErrorCode.invalid_request),
    ({"owned": None}, ErrorCode.invalid_request),
    ({"owned": {T: frozenset({1})}}, ErrorCode.invalid_request),
    ({"subscribed_topic_names": None}, ErrorCode.invalid_request),
    ({"member_epoch": -3}, ErrorCode.invalid_request),
    ({"instance_id": ""}, ErrorCode.invalid_request),
    ({"server_assignor": "sticky"}, ErrorCode.unsupported_assignor),
    ({"subscribed_topic_regex": "("}, ErrorCode.invalid_regular_expression),
])
def test_malformed_first_requests_are_refused_with_kafkas_errors(change: dict, code: ErrorCode) -> None:
    req = HeartbeatRequest(member_id="a", member_epoch=0, rebalance_timeout_ms=1, subscribed_topic_names=("t",),
                           owned={})
    assert error(validate, "g", dataclasses.replace(req, **change), CFG) == code
    assert error(validate, "", req, CFG) == ErrorCode.invalid_request


def test_group_max_size() -> None:
    g = ConsumerGroup("g")
    cfg = ConsumerGroupConfig(max_size=1)
    heartbeat(g, HeartbeatRequest(member_id="a", member_epoch=0, rebalance_timeout_ms=1,
                                  subscribed_topic_names=("t",), owned={}), TOPICS, cfg, 0)
    assert error(heartbeat, g, HeartbeatRequest(member_id="b", member_epoch=0, rebalance_timeout_ms=1,
                                                subscribed_topic_names=("t",), owned={}), TOPICS, cfg, 0) \
        == ErrorCode.group_max_size_reached
