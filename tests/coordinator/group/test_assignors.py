"""The server-side assignors of KIP-848: uniform (balanced, sticky) and range (per topic)."""

from __future__ import annotations

import uuid

from coordinator.group.assignors import ASSIGNORS, GroupSpec, MemberSubscription, RangeAssignor, UniformAssignor

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def spec(members: dict[str, set[uuid.UUID]], partitions: dict[uuid.UUID, int],
         current: dict[str, dict[uuid.UUID, frozenset[int]]] | None = None) -> GroupSpec:
    current = current or {}
    return GroupSpec(members=tuple(MemberSubscription(member_id=m, topic_ids=frozenset(t), current=current.get(m, {}))
                                   for m, t in members.items()), partitions=partitions)


def counts(assignment: dict[str, dict[uuid.UUID, frozenset[int]]]) -> dict[str, int]:
    return {m: sum(len(ps) for ps in topics.values()) for m, topics in assignment.items()}


def every_partition_once(assignment: dict[str, dict[uuid.UUID, frozenset[int]]],
                         partitions: dict[uuid.UUID, int]) -> bool:
    seen = [(t, p) for topics in assignment.values() for t, ps in topics.items() for p in ps]
    return len(seen) == len(set(seen)) and set(seen) == {(t, p) for t, n in partitions.items() for p in range(n)}


def test_the_default_assignor_is_uniform_then_range() -> None:
    assert list(ASSIGNORS) == ["uniform", "range"]


def test_uniform_balances_and_covers_every_partition() -> None:
    parts = {T1: 5, T2: 2}
    out = UniformAssignor().assign(spec({"a": {T1, T2}, "b": {T1, T2}, "c": {T1, T2}}, parts))
    assert sorted(counts(out).values()) == [2, 2, 3]
    assert every_partition_once(out, parts)


def test_uniform_is_sticky_when_a_member_joins() -> None:
    parts = {T1: 6}
    before = UniformAssignor().assign(spec({"a": {T1}, "b": {T1}}, parts))
    after = UniformAssignor().assign(spec({"a": {T1}, "b": {T1}, "c": {T1}}, parts, before))
    assert counts(after) == {"a": 2, "b": 2, "c": 2}
    for member in ("a", "b"):  # the old members only lose partitions, never swap them
        assert after[member][T1] <= before[member][T1]


def test_uniform_gives_a_topic_only_to_its_subscribers() -> None:
    parts = {T1: 4, T2: 4}
    out = UniformAssignor().assign(spec({"a": {T1}, "b": {T1, T2}}, parts))
    assert T2 not in out["a"] and out["b"][T2] == frozenset(range(4))
    assert every_partition_once(out, parts)


def test_uniform_drops_partitions_of_topics_no_longer_subscribed_or_gone() -> None:
    out = UniformAssignor().assign(spec({"a": {T1}}, {T1: 2}, {"a": {T2: frozenset({0}), T1: frozenset({5})}}))
    assert out == {"a": {T1: frozenset({0, 1})}}


def test_range_gives_contiguous_ranges_per_topic_in_member_order() -> None:
    out = RangeAssignor().assign(spec({"b": {T1, T2}, "a": {T1, T2}}, {T1: 3, T2: 3}))
    assert out == {"a": {T1: frozenset({0, 1}), T2: frozenset({0, 1})}, "b": {T1: frozenset({2}), T2: frozenset({2})}}


def test_assignors_leave_members_without_partitions_empty() -> None:
    for assignor in ASSIGNORS.values():
        out = assignor.assign(spec({"a": {T1}, "b": {T1}, "c": {T1}}, {T1: 1}))
        assert sorted(counts(out).values()) == [0, 0, 1]


def test_uniform_stays_balanced_when_stickiness_would_leave_a_newcomer_empty() -> None:
    # Found by test_consumer_group_machine: keeping every member's ceil(4/3) = 2 starved the third.
    parts = {T1: 4}
    before = {"a": {T1: frozenset({0, 1})}, "b": {T1: frozenset({2, 3})}}
    after = UniformAssignor().assign(spec({"a": {T1}, "b": {T1}, "c": {T1}}, parts, before))
    assert sorted(counts(after).values()) == [1, 1, 2]
    assert after["a"][T1] == frozenset({0, 1}) and after["b"][T1] <= before["b"][T1]


def _static(members: dict[str, tuple[str | None, set[uuid.UUID]]], partitions: dict[uuid.UUID, int]) -> GroupSpec:
    return GroupSpec(members=tuple(MemberSubscription(member_id=m, instance_id=i, topic_ids=frozenset(t))
                                   for m, (i, t) in members.items()), partitions=partitions)


def test_range_orders_static_members_first_by_instance_id_as_kafka() -> None:
    # Kafka's RangeAssignor.sortMemberIds: instance ids first (their order), then member ids.
    out = RangeAssignor().assign(_static({"a": (None, {T1}), "z": ("i1", {T1}), "y": ("i2", {T1})}, {T1: 5}))
    assert out == {"z": {T1: frozenset({0, 1})}, "y": {T1: frozenset({2, 3})}, "a": {T1: frozenset({4})}}


def test_range_gives_a_restarted_static_member_its_ranges_back() -> None:
    # The range assignor keeps no memory of the previous target (Kafka 4.x's is not sticky):
    # a static member that comes back under a new member id sorts by its instance id again.
    before = RangeAssignor().assign(_static({"m1": ("i1", {T1, T2}), "m2": ("i2", {T1, T2})}, {T1: 3, T2: 3}))
    after = RangeAssignor().assign(_static({"zz": ("i1", {T1, T2}), "m2": ("i2", {T1, T2})}, {T1: 3, T2: 3}))
    assert after["zz"] == before["m1"] and after["m2"] == before["m2"]


def test_range_counts_only_a_topics_subscribers_for_its_ranges() -> None:
    out = RangeAssignor().assign(_static({"a": (None, {T1, T2}), "b": (None, {T1}), "c": ("i", {T2})},
                                         {T1: 4, T2: 3}))
    assert out == {"a": {T1: frozenset({0, 1}), T2: frozenset({2})}, "b": {T1: frozenset({2, 3})},
                   "c": {T2: frozenset({0, 1})}}
