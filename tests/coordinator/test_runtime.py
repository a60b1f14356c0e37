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

    def replay(self, record):
        self.events.append(("replay", record))
        self.state.append(record)
        self.pending = None


@dataclass(frozen=True)
class Put(Message[str]):
    value: str
    fail: bool = False


@dataclass(frozen=True)
class Tick(Message[None]):
    pass


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
            case Tick():
                self.ticks += 1
                if self.ticks == 2:
                    self.ticked_twice.set()

    async def write(self, records):
        self.shard.events.append(("write", tuple(records)))
        if self.fail:
            raise KafkaError(ErrorCode.coordinator_not_available, "disk")

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
