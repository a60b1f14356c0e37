"""CoordinatorRuntime: persist, replay, effects and answer, in that order; a failed write leaves
the shard as it was; an ApiError reaches the caller as KafkaError; a stopped actor fails its
callers; a timer queues its message."""

import asyncio
from dataclasses import dataclass

import pytest

from coordinator.runtime import ApiError, CoordinatorResult, CoordinatorRuntime, Message
from protocol.errors import ErrorCode, KafkaError


class Shard:
    def __init__(self):
        self.state, self.pending, self.events = [], None, []

    def begin(self, records):
        self.pending = list(records)

    def revert(self, records):
        self.pending = None

    def replay(self, record, offset=None):
        self.events.append(("replay", record) if offset is None else ("replay", record, offset))
        self.state.append(record)
        self.pending = None


@dataclass(frozen=True)
class Put(Message[str]):
    value: str
    fail: bool = False


@dataclass(frozen=True)
class Tick(Message[None]):
    pass


@dataclass(frozen=True)
class PutMany(Message[None]):
    values: tuple[str, ...]


class Coordinator:
    def __init__(self):
        self.shard, self.ticks, self.fail = Shard(), 0, False
        self.ticked_twice = asyncio.Event()
        self.runtime = CoordinatorRuntime("test coordinator", self.execute, write=self.write, run_effect=self.effect)

    async def execute(self, message):
        match message:
            case Put(value="refused"):
                return await self.runtime.apply(self.shard, CoordinatorResult(
                    response=ApiError(ErrorCode.invalid_request, "no"), records=("r",)))
            case Put():
                self.fail = message.fail
                return await self.runtime.apply(self.shard, CoordinatorResult(
                    response=f"ok {message.value}", records=(message.value,), effects=(f"after {message.value}",)))
            case PutMany(values):
                return await self.runtime.apply(self.shard, CoordinatorResult(response=None, records=values))
            case Tick():
                self.ticks += 1
                if self.ticks == 2:
                    self.ticked_twice.set()

    async def write(self, records):
        self.shard.events.append(("write", tuple(records)))
        if self.fail:
            raise KafkaError(ErrorCode.coordinator_not_available, "disk")
        if records[0].startswith("at "):  # a log that says where it wrote: each record's offset from it
            return int(records[0].removeprefix("at "))
        return None

    async def effect(self, effect):
        self.shard.events.append(("effect", effect))


async def test_records_are_written_then_replayed_then_effects_run_then_the_answer():
    c = Coordinator()
    c.runtime.start()
    try:
        assert await c.runtime.call(Put("a")) == "ok a"
    finally:
        await c.runtime.stop()
    assert c.shard.events == [("write", ("a",)), ("replay", "a"), ("effect", "after a")]


async def test_each_record_is_replayed_at_its_offset_when_the_write_gives_the_first():
    c = Coordinator()
    c.runtime.start()
    try:
        await c.runtime.call(PutMany(("at 40", "b", "c")))
    finally:
        await c.runtime.stop()
    assert c.shard.events == [("write", ("at 40", "b", "c")), ("replay", "at 40", 40), ("replay", "b", 41),
                              ("replay", "c", 42)]


async def test_a_failed_write_reverts_and_nothing_is_replayed_or_run():
    c = Coordinator()
    c.runtime.start()
    try:
        with pytest.raises(KafkaError) as caught:
            await c.runtime.call(Put("a", fail=True))
        assert caught.value.code is ErrorCode.coordinator_not_available
        assert await c.runtime.call(Put("b")) == "ok b"  # the actor serves on
    finally:
        await c.runtime.stop()
    assert c.shard.state == ["b"] and c.shard.pending is None


async def test_an_api_error_with_records_persists_them_and_raises_kafka_error():
    c = Coordinator()
    c.runtime.start()
    try:
        with pytest.raises(KafkaError) as caught:
            await c.runtime.call(Put("refused"))
    finally:
        await c.runtime.stop()
    assert (caught.value.code, caught.value.message) == (ErrorCode.invalid_request, "no")
    assert c.shard.state == ["r"]


async def test_callers_of_a_stopped_actor_get_coordinator_not_available():
    c = Coordinator()
    c.runtime.start()
    queued = [asyncio.ensure_future(c.runtime.call(Put(str(i)))) for i in range(3)]
    await c.runtime.stop()  # before the queued calls ran
    for call in queued:
        with pytest.raises(KafkaError) as caught:
            await call
        assert caught.value.code is ErrorCode.coordinator_not_available
    with pytest.raises(KafkaError) as caught:
        await c.runtime.call(Put("late"))
    assert caught.value.code is ErrorCode.coordinator_not_available


async def test_a_timer_queues_its_message():
    c = Coordinator()
    c.runtime.start()
    try:
        c.runtime.every("tick", 1, Tick)
        await c.ticked_twice.wait()
    finally:
        await c.runtime.stop()
    assert c.ticks >= 2


@dataclass(frozen=True)
class Write(Message[str]):
    key: str
    value: str


class Pipelined:
    """A coordinator whose writes stay out until the test lets them be durable (or fail)."""

    def __init__(self):
        self.shards: dict[str, Shard] = {}
        self.writes: list[tuple[str, asyncio.Future[None]]] = []  # (value, its durability), in order
        self.executed: list[str] = []
        self.runtime = CoordinatorRuntime("pipelined", self.execute, start_write=self.start_write,
                                          run_effect=self.effect, key_of=lambda m: getattr(m, "key", None))

    async def execute(self, message):
        match message:
            case Write():
                self.executed.append(message.value)
                shard = self.shards.setdefault(message.key, Shard())
                return await self.runtime.apply_later(shard, CoordinatorResult(
                    response=f"ok {message.value} after {len(shard.state)}", records=(message.value,),
                    effects=(message.value,)))
            case Tick():
                return "tick"

    def start_write(self, records):
        written = asyncio.get_running_loop().create_future()
        self.writes.append((records[0], written))
        return written

    async def effect(self, effect):
        self.executed.append(f"effect {effect}")

    def durable(self, value, error=None):
        written = next(w for v, w in self.writes if v == value)
        if error is None:
            written.set_result(None)
        else:
            written.set_exception(error)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_apply_later_serves_other_keys_while_a_write_is_out_and_answers_once_it_is_durable():
    c = Pipelined()
    c.runtime.start()
    try:
        a = asyncio.ensure_future(c.runtime.call(Write("x", "a")))
        b = asyncio.ensure_future(c.runtime.call(Write("y", "b")))
        await settle()
        assert await c.runtime.call(Tick()) == "tick"  # not held by the two writes out
        assert [v for v, _ in c.writes] == ["a", "b"] and not a.done() and not b.done()
        c.durable("b")
        assert await b == "ok b after 0"
        assert not a.done() and c.shards["x"].state == [] and c.shards["x"].pending == ["a"]
        c.durable("a")
        assert await a == "ok a after 0"
        assert c.shards["x"].state == ["a"] and c.executed == ["a", "b", "effect b", "effect a"]
    finally:
        await c.runtime.stop()


async def test_a_key_waits_for_its_write_then_is_decided_on_the_state_it_left_in_order():
    c = Pipelined()
    c.runtime.start()
    try:
        calls = [asyncio.ensure_future(c.runtime.call(Write("x", v))) for v in ("a", "b", "c")]
        await settle()
        assert c.executed == ["a"]  # b and c wait for a's write, not decided against its pending state
        c.durable("a")
        assert await calls[0] == "ok a after 0"
        await settle()
        assert [v for v, _ in c.writes] == ["a", "b"]
        c.durable("b")
        assert await calls[1] == "ok b after 1"
        await settle()
        c.durable("c")
        assert await calls[2] == "ok c after 2"
        assert c.shards["x"].state == ["a", "b", "c"]
    finally:
        await c.runtime.stop()


async def test_a_failed_pipelined_write_reverts_and_the_key_is_served_again():
    c = Pipelined()
    c.runtime.start()
    try:
        first = asyncio.ensure_future(c.runtime.call(Write("x", "a")))
        second = asyncio.ensure_future(c.runtime.call(Write("x", "b")))
        await settle()
        c.durable("a", KafkaError(ErrorCode.coordinator_not_available, "disk"))
        with pytest.raises(KafkaError) as caught:
            await first
        assert caught.value.code is ErrorCode.coordinator_not_available
        await settle()
        c.durable("b")
        assert await second == "ok b after 0"
        assert c.shards["x"].state == ["b"] and "effect a" not in c.executed
    finally:
        await c.runtime.stop()


async def test_stopping_fails_the_writes_out_and_the_messages_behind_them():
    c = Pipelined()
    c.runtime.start()
    out = asyncio.ensure_future(c.runtime.call(Write("x", "a")))
    behind = asyncio.ensure_future(c.runtime.call(Write("x", "b")))
    await settle()
    settled = asyncio.ensure_future(c.runtime.settled())
    await settle()
    assert not settled.done()
    await c.runtime.stop()
    for call in (out, behind):
        with pytest.raises(KafkaError) as caught:
            await call
        assert caught.value.code is ErrorCode.coordinator_not_available
    await settled
