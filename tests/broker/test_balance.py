"""The balance plan, pure: brokers apply their own plans one after another over a simulated
database until nothing moves, from random starting points (Hypothesis)."""

from __future__ import annotations

import math
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.cluster.balance import assign, plan
from storage.api import PartitionLease, TopicPartition


def leases(layout: dict[str, int], leaders: dict[TopicPartition, int] | None = None) -> list[PartitionLease]:
    leaders = leaders or {}
    return [PartitionLease(TopicPartition(t, p), leaders.get(TopicPartition(t, p), -1), 0, 1)
            for t, n in layout.items() for p in range(n)]


class Cluster:
    """The database's rows and each broker's own idea of what it leads (partition -> epoch)."""

    def __init__(self, rows: list[PartitionLease], brokers: list[int]) -> None:
        self.rows = {r.tp: r for r in rows}
        self.brokers = brokers
        self.held: dict[int, dict[TopicPartition, int]] = {b: {} for b in brokers}
        for r in rows:
            if r.leader in self.held:
                self.held[r.leader][r.tp] = r.leader_epoch

    def round(self, me: int) -> int:
        """One balancing round of broker me; how many partitions moved."""
        moves = plan(me, self.held[me], self.brokers, list(self.rows.values()))
        for tp in moves.lost:
            del self.held[me][tp]
        for tp in moves.release:
            del self.held[me][tp]
            self.rows[tp] = self.rows[tp]._replace(leader=-1)
        for tp, epoch in moves.disown:
            if self.rows[tp].leader == me and self.rows[tp].leader_epoch == epoch:
                self.rows[tp] = self.rows[tp]._replace(leader=-1)
        for tp in moves.take:
            row = self.rows[tp]
            if row.leader in (-1, me):  # the compare-and-set of ClusterStore.take
                self.rows[tp] = row._replace(leader=me, leader_epoch=row.leader_epoch + 1)
                self.held[me][tp] = row.leader_epoch + 1
        return len(moves.take) + len(moves.release) + len(moves.lost) + len(moves.disown)

    def settle(self, max_passes: int = 10) -> int:
        for passes in range(1, max_passes + 1):
            if sum(self.round(b) for b in self.brokers) == 0:
                return passes
        raise AssertionError(f"still moving after {max_passes} passes: {self.rows}")

    def count(self, topic: str | None = None) -> Counter[int]:
        return Counter(r.leader for r in self.rows.values() if topic is None or r.tp.topic == topic)


def test_one_broker_leads_everything() -> None:
    cluster = Cluster(leases({"a": 3, "__consumer_offsets": 5}), [1])
    cluster.settle()
    assert cluster.count() == {1: 8}


def test_a_joining_broker_gets_its_share_and_nothing_else_moves() -> None:
    cluster = Cluster(leases({"a": 4, "b": 2}), [1, 2])
    cluster.settle()
    before = {tp: r.leader for tp, r in cluster.rows.items()}
    assert cluster.count("a") == {1: 2, 2: 2} and cluster.count("b") == {1: 1, 2: 1}
    cluster.brokers.append(3)
    cluster.held[3] = {}
    cluster.settle()
    assert cluster.count() == {1: 2, 2: 2, 3: 2}
    assert max(cluster.count("a").values()) <= 2 and max(cluster.count("b").values()) <= 1
    moved = [tp for tp, r in cluster.rows.items() if r.leader != before[tp]]
    assert len(moved) == 2  # only what the new broker takes


def test_one_partition_topics_spread_across_brokers() -> None:
    cluster = Cluster(leases({f"t{i}": 1 for i in range(9)}), [1, 2, 3])
    cluster.settle()
    assert cluster.count() == {1: 3, 2: 3, 3: 3}


def test_partitions_of_a_dead_broker_are_shared_out() -> None:
    rows = leases({"a": 6}, {TopicPartition("a", p): 1 + p % 3 for p in range(6)})
    cluster = Cluster(rows, [1, 2])  # broker 3 is no longer live: its rows read as free
    cluster.rows = {tp: r._replace(leader=-1) if r.leader == 3 else r for tp, r in cluster.rows.items()}
    cluster.settle()
    assert cluster.count() == {1: 3, 2: 3}


def test_rows_naming_us_from_an_earlier_incarnation_are_taken_again() -> None:
    rows = leases({"a": 2}, {TopicPartition("a", 0): 1, TopicPartition("a", 1): 1})
    moves = plan(1, {}, [1], rows)
    assert moves.take == [TopicPartition("a", 0), TopicPartition("a", 1)] and not moves.release


def test_a_broker_that_dropped_its_partitions_gets_them_led_again() -> None:
    """After a lapse (the database restarted) broker 3 serves nothing, though its rows still name
    it and the others, seeing it live, leave them to it. Were they free in its own view, its target
    would give a-3 to broker 1 on a tie, broker 1's would leave it with broker 3, and no one would
    lead it (a transaction coordinator shard answered NOT_COORDINATOR for minutes this way)."""
    leaders = {TopicPartition("a", p): leader for p, leader in enumerate((1, 2, 3, 3))}
    cluster = Cluster(leases({"a": 4}, leaders), [1, 2, 3])
    cluster.held[3] = {}
    cluster.settle()
    assert {tp for b in cluster.brokers for tp in cluster.held[b]} == set(cluster.rows)
    assert all(cluster.held[r.leader].get(tp) == r.leader_epoch for tp, r in cluster.rows.items())


def test_a_row_naming_us_meant_for_another_broker_is_freed() -> None:
    rows = leases({"a": 2}, {TopicPartition("a", 0): 1, TopicPartition("a", 1): 1})
    moves = plan(1, {}, [1, 2], rows)  # a share is one each: a-1 goes to broker 2
    assert moves.take == [TopicPartition("a", 0)] and moves.disown == [(TopicPartition("a", 1), 0)]
    assert plan(2, {}, [1, 2], rows).take == []  # broker 1's row: broker 2 waits for it to be freed


def test_a_partition_led_elsewhere_at_a_newer_epoch_is_lost() -> None:
    tp = TopicPartition("a", 0)
    rows = [PartitionLease(tp, 2, 4, 1)]
    assert plan(1, {tp: 3}, [1, 2], rows).lost == [tp]
    assert plan(1, {tp: 3}, [1, 2], []).lost == [tp]  # its topic was deleted


def test_nothing_is_assigned_without_live_brokers() -> None:
    assert assign([], leases({"a": 2})) == {}


@settings(max_examples=60, deadline=None)
@given(layout=st.dictionaries(st.sampled_from("abcdef"), st.integers(1, 12), min_size=1),
       brokers=st.integers(1, 5), data=st.data())
def test_balance_settles_with_every_partition_led_within_its_share(layout, brokers, data) -> None:  # type: ignore[no-untyped-def]
    ids = list(range(1, brokers + 1))
    rows = leases(layout)
    start = {r.tp: data.draw(st.sampled_from([-1, *ids])) for r in rows}
    cluster = Cluster(leases(layout, start), ids)
    for b in data.draw(st.sets(st.sampled_from(ids))):  # these lost their lease and dropped everything
        cluster.held[b] = {}
    cluster.settle()
    assert all(r.leader in ids for r in cluster.rows.values())
    for topic, n in layout.items():
        assert max(cluster.count(topic).values()) <= math.ceil(n / brokers)
    # What each broker believes it leads is what the database says.
    assert {tp for b in ids for tp in cluster.held[b]} == set(cluster.rows)
