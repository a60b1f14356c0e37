"""Share group membership (coordinator/share/group.py), the "simple" assignor, share sessions and
the __share_group_state record layouts, all pure."""

from __future__ import annotations

import uuid

import pytest

from coordinator.share.assignor import assign
from coordinator.share.group import ShareGroup, ShareHeartbeat, TopicInfo
from coordinator.share.partition_state import RecordState, StateBatch
from coordinator.share.sessions import ShareSessionCache, connection_id
from coordinator.share.state_log import (
    SharePartitionKey,
    StoredShareState,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from protocol.errors import CorruptRecordError, ErrorCode, KafkaError
from storage.api import TopicPartition

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {"t1": TopicInfo(T1, 3), "t2": TopicInfo(T2, 1)}


def hb(member: str, epoch: int, topics: tuple[str, ...] | None = ("t1",)) -> ShareHeartbeat:
    return ShareHeartbeat(member_id=member, member_epoch=epoch, rack_id=None, subscribed_topic_names=topics,
                          client_id="c", client_host="/127.0.0.1")


def test_members_join_get_partitions_and_move_to_the_group_epoch() -> None:
    g = ShareGroup("g")
    a = g.heartbeat(hb("a", 0), TOPICS, 0, 45000, 10)
    # the member and the subscribed topics' metadata each bump the group epoch, as in Kafka; the
    # share-partitions are initialized before they are assigned: nothing yet, as Kafka answers
    assert (a.member_epoch, a.assignment) == (2, {})
    assert g.start_initializing(0, 30000) == {T1: (range(3), -1)}  # new to the group: share.auto.offset.reset
    b = g.heartbeat(hb("b", 0), TOPICS, 0, 45000, 10)
    assert (b.member_epoch, b.assignment) == (3, {})
    # being initialized: not again until the retry interval has passed
    assert g.start_initializing(29999, 30000) == {}
    assert g.start_initializing(30000, 30000) == {T1: (range(3), 0)}
    # their share coordinator initialized them (the epoch moves): a and b share them out
    g.initialized_now(T1, range(3))
    assert (g.initializing, g.start_initializing(30001, 30000)) == ({}, {})
    first = g.heartbeat(hb("a", 2, None), TOPICS, 0, 45000, 10)
    second = g.heartbeat(hb("b", 3, None), TOPICS, 0, 45000, 10)
    assert first.member_epoch == second.member_epoch == 4
    assert first.assignment and second.assignment
    assert sorted(p for r in (first, second) for p in (r.assignment or {})[T1]) == [0, 1, 2]
    assert g.heartbeat(hb("a", 4, None), TOPICS, 0, 45000, 10).assignment is None  # nothing new
    assert g.state == "Stable"


def test_a_failed_initialization_is_tried_again_and_new_partitions_are_initialized() -> None:
    g = ShareGroup("g")
    g.heartbeat(hb("a", 0), TOPICS, 0, 45000, 10)
    assert g.start_initializing(0, 30000) == {T1: (range(3), -1)}
    g.initialize_failed(T1, range(3))
    assert g.start_initializing(1, 30000) == {T1: (range(3), -1)}  # at once: nothing is initializing
    g.initialized_now(T1, range(3))
    # the topic grows: only its new partitions are initialized, the others stay assigned
    grown = {"t1": TopicInfo(T1, 5)}
    g.heartbeat(hb("a", g.members["a"].member_epoch, None), grown, 2, 45000, 10)
    assert g.members["a"].assignment == {T1: frozenset({0, 1, 2})}
    # partitions added to a topic the group has start at offset 0, as Kafka 4.4 initializes them
    assert g.start_initializing(2, 30000) == {T1: (range(3, 5), 0)}


@pytest.mark.parametrize(("request_", "code"), [
    (hb("", 0), ErrorCode.invalid_request), (hb("a", 0, ()), ErrorCode.invalid_request),
    (hb("x", 5), ErrorCode.unknown_member_id), (hb("a", 7, None), ErrorCode.fenced_member_epoch),
    (hb("a", 1, None), ErrorCode.fenced_member_epoch),
])
def test_heartbeat_errors(request_: ShareHeartbeat, code: ErrorCode) -> None:
    g = ShareGroup("g")
    g.heartbeat(hb("a", 0), TOPICS, 0, 45000, 10)
    with pytest.raises(KafkaError) as e:
        g.heartbeat(request_, TOPICS, 0, 45000, 10)
    assert e.value.code is code


def test_group_size_and_session_timeout() -> None:
    g = ShareGroup("g")
    g.heartbeat(hb("a", 0), TOPICS, 0, 100, 1)
    with pytest.raises(KafkaError) as e:
        g.heartbeat(hb("b", 0), TOPICS, 0, 100, 1)
    assert e.value.code is ErrorCode.group_max_size_reached
    assert g.expired(99) == [] and g.expired(100) == ["a"]
    g.remove("a")
    assert g.state == "Empty"


def test_assignor_spreads_partitions_and_shares_them_when_members_outnumber_them() -> None:
    subs = {m: frozenset({T1}) for m in "abc"}
    out = assign(subs, {T1: 3}, {})
    assert sorted(p for a in out.values() for p in a[T1]) == [0, 1, 2]
    five = assign({m: frozenset({T1}) for m in "abcde"}, {T1: 3}, out)
    assert all(len(a[T1]) == 1 for a in five.values())
    assert {p for a in five.values() for p in a[T1]} == {0, 1, 2}
    # sticky: the first three keep what they had
    assert all(five[m] == out[m] for m in "abc")
    mixed = assign({"a": frozenset({T1}), "b": frozenset({T2})}, {T1: 3, T2: 1}, {})
    assert mixed == {"a": {T1: frozenset({0, 1, 2})}, "b": {T2: frozenset({0})}}


def test_sessions_open_advance_and_close() -> None:
    cache = ShareSessionCache(max_sessions=1)
    session, replaced = cache.open("g", "a")
    assert (session.epoch, replaced) == (1, None)
    session.update({(T1, 0): TopicPartition("t1", 0)}, [])
    assert cache.advance("g", "a", 1).epoch == 2
    with pytest.raises(KafkaError) as e:
        cache.advance("g", "a", 1)
    assert e.value.code is ErrorCode.invalid_share_session_epoch
    with pytest.raises(KafkaError) as e:
        cache.open("g", "b")
    assert e.value.code is ErrorCode.share_session_limit_reached
    assert cache.open("g", "a")[1] is session  # the member's new session replaces its old one
    cache.close("g", "a")
    with pytest.raises(KafkaError) as e:
        cache.advance("g", "a", 2)
    assert e.value.code is ErrorCode.share_session_not_found


def test_state_records_round_trip_and_refuse_garbage() -> None:
    key = SharePartitionKey("grüppe", T1, 7)
    value = StoredShareState(3, 42, (StateBatch(42, 45, RecordState.ACKNOWLEDGED, 1),
                                     StateBatch(46, 46, RecordState.AVAILABLE, 4)))
    assert decode_key(encode_key(key)) == key
    assert decode_value(encode_value(value)) == value
    assert str(key) == f"grüppe:{T1}:7"
    for bad in (b"", b"\x00\x09" + encode_key(key)[2:]):
        with pytest.raises(CorruptRecordError):
            decode_key(bad)
    with pytest.raises(CorruptRecordError):
        decode_value(encode_value(value)[:-3])


def test_sessions_end_with_the_connection_that_opened_them() -> None:
    cache = ShareSessionCache(max_sessions=3)
    a, _ = cache.open("g", "a", "L/1.2.3.4:5")
    cache.open("g", "b", "L/1.2.3.4:6")
    cache.open("g", "c")  # no connection known: never ended by one
    assert cache.end_connection("L/1.2.3.4:5") == [a]
    assert cache.get("g", "a") is None and cache.get("g", "b") is not None
    assert cache.end_connection("") == [] and cache.get("g", "c") is not None
    assert connection_id("L", "?") == "" and connection_id("L", "1.2.3.4:5") == "L/1.2.3.4:5"
