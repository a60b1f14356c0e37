"""ClusterMember against a real PostgreSQL server: several members in one process, each with a
storage backend that records what it is told. Leases are long (nothing expires by itself) and
the tests run balancing rounds themselves; a lease "lapses" by SQL, as in test_cluster_store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable

import asyncpg
import pytest

from broker.cluster.member import ClusterMember
from storage.api import BrokerEndpoint, TopicPartition
from storage.pg.cluster_store import ClusterStore
from tests.storage.pg.test_cluster_store import add_topic, lapse, pool  # noqa: F401 (fixture)

LEASE_MS = 600_000
Event = tuple[str, ...]


class Recorder:
    """A LeadershipListener that writes what it hears into a shared list."""

    def __init__(self, name: str, events: list[Event]) -> None:
        self.name, self.events = name, events

    async def on_elected(self, tp: TopicPartition, leader_epoch: int) -> None:
        self.events.append((self.name, "elected", str(tp), str(leader_epoch)))

    async def on_resigned(self, tp: TopicPartition) -> None:
        self.events.append((self.name, "resigned", str(tp)))


MemberFactory = Callable[[int], Awaitable[ClusterMember]]


@pytest.fixture
async def members(pool: asyncpg.Pool, pg_url: str) -> AsyncIterator[tuple[MemberFactory, list[Event]]]:  # noqa: F811
    events: list[Event] = []
    started: list[ClusterMember] = []

    async def start(node_id: int) -> ClusterMember:
        member = ClusterMember(ClusterStore(pool, node_id, LEASE_MS, pg_url),
                               lambda: BrokerEndpoint(node_id, "127.0.0.1", 9000 + node_id), LEASE_MS,
                               Recorder(f"logs{node_id}", events))
        await member.start()
        started.append(member)
        return member

    yield start, events
    for member in started:
        await member.stop()


def led(*members: ClusterMember) -> dict[int, list[str]]:
    return {m.node_id: sorted(str(tp) for tp in m.view.serving) for m in members}


async def settle(*members: ClusterMember) -> None:
    """Balancing rounds until one full pass over the members changes nothing."""
    for _ in range(10):
        before = led(*members)
        for m in members:
            await m.balance()
        if led(*members) == before:
            return
    raise AssertionError(f"leadership still moving: {led(*members)}")


async def test_the_first_broker_leads_everything_and_others_take_their_share(members) -> None:  # type: ignore[no-untyped-def]
    start, events = members
    one = await start(1)
    # The fixture's topics: t with 2 partitions, u with 1.
    assert led(one) == {1: ["t-0", "t-1", "u-0"]}
    assert one.view.live_brokers() == [BrokerEndpoint(1, "127.0.0.1", 9001)]
    two = await start(2)
    await settle(one, two)
    assert sorted(led(one, two)[1] + led(one, two)[2]) == ["t-0", "t-1", "u-0"]
    assert len(led(one, two)[1]) <= 2 and len(led(one, two)[2]) >= 1
    moved = led(one, two)[2][0]
    # The partition moved: released by 1 (log closed), then opened by 2 at the next epoch.
    assert [e for e in events if e[2] == moved] == [
        ("logs1", "elected", moved, "1"), ("logs1", "resigned", moved), ("logs2", "elected", moved, "2")]
    tp = TopicPartition(*moved.rsplit("-", 1)[0:1], int(moved.rsplit("-", 1)[1]))
    assert one.view.leader(tp) == (2, 2) and two.view.leader(tp) == (2, 2)


async def test_listeners_hear_after_the_log_opens_and_before_it_closes(members) -> None:  # type: ignore[no-untyped-def]
    start, events = members
    one = await start(1)
    one.view.add_listener(Recorder("coordinator1", events))  # announced what 1 leads already
    two = await start(2)
    two.view.add_listener(Recorder("coordinator2", events))
    await settle(one, two)
    [moved, *_] = led(one, two)[2]
    assert [e[:2] for e in events if e[2] == moved] == [
        ("logs1", "elected"), ("coordinator1", "elected"), ("coordinator1", "resigned"), ("logs1", "resigned"),
        ("logs2", "elected"), ("coordinator2", "elected")]


async def test_a_lapsed_broker_loses_everything_and_comes_back_at_new_epochs(members, pool) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    start, events = members
    one, two = await start(1), await start(2)
    await settle(one, two)
    await lapse(pool, 1)  # broker 1 was paused past its lease
    await two.balance()
    assert led(two) == {2: ["t-0", "t-1", "u-0"]}
    # Broker 1 still believes it leads until it looks: its next round finds its rows taken.
    await one.balance()
    assert led(one) == {1: []}
    assert not await one.store.heartbeat()  # what its heartbeat task finds: it registers again
    assert await one.store.register(BrokerEndpoint(1, "127.0.0.1", 9001))
    await settle(one, two)
    assert len(led(one)[1]) >= 1
    epochs = {tp: e for tp, e in two.view.serving.items()} | {tp: e for tp, e in one.view.serving.items()}
    assert all(epoch >= 2 for epoch in epochs.values())


async def test_a_broker_that_stops_hands_over_at_once(members) -> None:  # type: ignore[no-untyped-def]
    start, _ = members
    one, two = await start(1), await start(2)
    await settle(one, two)
    await one.stop()
    await two.balance()
    assert led(two) == {2: ["t-0", "t-1", "u-0"]}
    assert [b.node_id for b in two.view.live_brokers()] == [2]


async def wait_for(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(20):  # a bound, not a speed check: unwoken rounds are 150 s apart
        while not condition():
            await asyncio.sleep(0.05)


async def test_a_join_and_a_release_wake_the_other_brokers_at_once(members) -> None:  # type: ignore[no-untyped-def]
    """No round is run by hand, and the rounds' own interval is lease / 4 = 150 s: broker 2 gets
    its share only because its registration wakes broker 1, which releases, and broker 1's
    release wakes broker 2, which takes (LISTEN/NOTIFY)."""
    start, events = members
    one = await start(1)
    two = await start(2)
    await wait_for(lambda: bool(led(two)[2]))
    assert sorted(led(one)[1] + led(two)[2]) == ["t-0", "t-1", "u-0"]
    [moved, *_] = led(two)[2]
    assert [e[:2] for e in events if e[2] == moved] == [
        ("logs1", "elected"), ("logs1", "resigned"), ("logs2", "elected")]
    await one.stop()  # its release wakes broker 2 again
    await wait_for(lambda: led(two)[2] == ["t-0", "t-1", "u-0"])


async def test_a_fenced_partition_is_dropped_and_a_deleted_topic_forgotten(members, pool) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    start, events = members
    one = await start(1)
    await pool.execute("DELETE FROM topics WHERE name = 'u'")
    async with pool.acquire() as conn:
        await add_topic(conn, "v", 1)
    await one.balance()
    assert led(one) == {1: ["t-0", "t-1", "v-0"]}
    assert ("logs1", "resigned", "u-0") in events
    one.lost(TopicPartition("v", 0))  # the backend's fenced append
    await one.balance()
    assert ("logs1", "resigned", "v-0") in events


class SlowOpen(Recorder):
    """A storage backend whose logs open only once the test lets them."""

    def __init__(self, name: str, events: list[Event]) -> None:
        super().__init__(name, events)
        self.opening: TopicPartition | None = None
        self.started, self.go = asyncio.Event(), asyncio.Event()

    async def on_elected(self, tp: TopicPartition, leader_epoch: int) -> None:
        self.opening = self.opening or tp
        self.started.set()
        await self.go.wait()
        await super().on_elected(tp, leader_epoch)


async def test_partitions_taken_but_not_open_yet_read_as_electing(members, pool: asyncpg.Pool, pg_url: str) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """From the take on, the database (so every other broker) names the new leader, while its logs
    open one by one: its view says which are still opening, so its coordinators answer them as
    loading rather than not theirs."""
    start, events = members
    one = await start(1)
    logs = SlowOpen("logs2", events)
    two = ClusterMember(ClusterStore(pool, 2, LEASE_MS, pg_url), lambda: BrokerEndpoint(2, "127.0.0.1", 9002),
                        LEASE_MS, logs)
    await two.start()  # 1 leads everything and is live: 2 takes nothing yet
    try:
        await one.stop()  # hands everything over; its notice wakes 2's balancing as well
        round_ = asyncio.ensure_future(two.balance())
        await logs.started.wait()  # a round of 2 took partitions, and the first one's log is opening
        tp = logs.opening
        assert tp is not None
        rows = {p.tp: p.leader for p in (await two.store.snapshot()).partitions}
        assert rows[tp] == 2 and two.view.electing(tp) and tp not in two.view.serving
        assert all(two.view.electing(p) for p, leader in rows.items() if leader == 2)
        logs.go.set()
        await round_
        await settle(two)
        assert led(two) == {2: ["t-0", "t-1", "u-0"]}
        assert not any(two.view.electing(p) for p in rows)
    finally:
        logs.go.set()
        await two.stop()


class SlowTakeAnswer(ClusterStore):
    """The database takes the partitions at once; its answer reaches the broker only when the test
    lets it (a loaded broker's event loop, or a slow network, between the commit and the reply)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.committed, self.answer = asyncio.Event(), asyncio.Event()

    async def take(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        taken = await super().take(partitions)
        self.committed.set()
        await self.answer.wait()
        return taken


async def test_electing_starts_before_the_take_answers(members, pool: asyncpg.Pool, pg_url: str) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """The other brokers see the take as soon as it commits: the view must say electing from then,
    not from when the answer is back."""
    start, events = members
    one = await start(1)
    store = SlowTakeAnswer(pool, 2, LEASE_MS, pg_url)
    two = ClusterMember(store, lambda: BrokerEndpoint(2, "127.0.0.1", 9002), LEASE_MS, Recorder("logs2", events))
    await two.start()
    try:
        await one.stop()
        round_ = asyncio.ensure_future(two.balance())
        await store.committed.wait()  # every other broker's next snapshot names 2 now
        rows = {p.tp: p.leader for p in (await one.store.snapshot()).partitions}
        mine = [tp for tp, leader in rows.items() if leader == 2]
        assert mine and all(two.view.electing(tp) for tp in mine)
        store.answer.set()
        await round_
        await settle(two)
        assert not any(two.view.electing(tp) for tp in rows)
    finally:
        store.answer.set()
        await two.stop()
