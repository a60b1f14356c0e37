"""A consumer group (KIP-848) whose records cannot be written: the GroupCoordinator over real
partition logs, with the group's __consumer_offsets partition failing its appends
(tests/coordinator/transaction/faulty_storage.py). A heartbeat answers the append's error and leaves
the group as it was (a group's first heartbeat does not create it); a session expiry whose fencing
cannot be written keeps the member and is tried again after Kafka's timer retry backoff (500 ms)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from coordinator.group.consumer_group import ConsumerGroup
from coordinator.group.consumer_heartbeat import HeartbeatRequest, HeartbeatResult
from coordinator.group.coordinator import GroupCoordinator
from coordinator.group.log import CONSUMER_OFFSETS_TOPIC
from protocol.errors import KafkaError
from storage.api import TopicPartition
from storage.log_manager import LogManager

from ..transaction.faulty_storage import FaultyLog, FaultyLogs
from .test_group_coordinator import CONFIG, Clock

SESSION_MS = 45_000  # group.consumer.session.timeout.ms's default


@dataclass
class Broken:
    clock: Clock
    coord: GroupCoordinator
    log: FaultyLog


@pytest.fixture
async def broken(tmp_path: Path) -> AsyncIterator[Broken]:
    logs = LogManager(tmp_path, {})
    logs.load()
    logs.start()
    await logs.create_topic("t", 4, {})
    clock = Clock()
    faults = FaultyLogs(logs)
    coord = GroupCoordinator(faults, CONFIG, clock_ms=clock)  # type: ignore[arg-type]
    await coord.start()
    tp = TopicPartition(CONSUMER_OFFSETS_TOPIC, coord.partition_for("g").partition)
    log = faults.break_partition(tp, lambda: KafkaError(ErrorCode.not_enough_replicas))
    log.heal()
    yield Broken(clock, coord, log)
    await coord.stop()
    await logs.close()


async def join(coord: GroupCoordinator, member: str) -> HeartbeatResult:
    return await coord.consumer_group_heartbeat("g", HeartbeatRequest(
        member_id=member, member_epoch=0, rebalance_timeout_ms=30_000, subscribed_topic_names=("t",), owned={}))


def consumer(coord: GroupCoordinator) -> ConsumerGroup:
    group = coord.groups["g"].consumer
    assert group is not None
    return group


async def test_a_heartbeat_whose_records_fail_changes_nothing(broken: Broken) -> None:
    coord = broken.coord
    broken.log.break_again()
    with pytest.raises(KafkaError) as first:
        await join(coord, "a")
    assert first.value.code is ErrorCode.coordinator_not_available  # Kafka's answer for NOT_ENOUGH_REPLICAS
    assert "g" not in coord.groups  # not created: its first records were not written
    broken.log.heal()
    assert (await join(coord, "a")).member_epoch == 1
    before = (consumer(coord).group_epoch, dict(consumer(coord).members), dict(consumer(coord).target))
    broken.log.break_again()
    with pytest.raises(KafkaError):
        await join(coord, "b")
    assert (consumer(coord).group_epoch, dict(consumer(coord).members), dict(consumer(coord).target)) == before
    broken.log.heal()
    assert (await join(coord, "b")).member_epoch == 2


async def test_a_fencing_that_fails_is_tried_again_after_the_backoff(broken: Broken) -> None:
    coord, clock = broken.coord, broken.clock
    await join(coord, "a")
    clock.now += 10_000
    await join(coord, "b")  # b's session ends 10 s after a's
    broken.log.break_again()
    clock.now += SESSION_MS - 10_000
    await coord.list_groups()  # a turn of the actor: a's session timer fires, its write fails
    assert broken.log.failures == 1
    assert set(consumer(coord).members) == {"a", "b"} and consumer(coord).group_epoch == 2
    broken.log.heal()
    clock.now += 499
    await coord.list_groups()
    assert set(consumer(coord).members) == {"a", "b"}
    clock.now += 1
    await coord.list_groups()
    assert set(consumer(coord).members) == {"b"} and consumer(coord).group_epoch == 3


@pytest.mark.parametrize(("stored", "answered"), [
    (ErrorCode.not_enough_replicas, ErrorCode.coordinator_not_available),
    (ErrorCode.unknown_topic_or_partition, ErrorCode.coordinator_not_available),
    # librdkafka ends a consumer-protocol member on a heartbeat answered REBALANCE_IN_PROGRESS
    # (a fatal error there), so a write that timed out must not be answered so (Kafka 4.x does not).
    (ErrorCode.request_timed_out, ErrorCode.coordinator_not_available),
    (ErrorCode.not_leader_or_follower, ErrorCode.not_coordinator),
    (ErrorCode.kafka_storage_error, ErrorCode.not_coordinator),
    (ErrorCode.message_too_large, ErrorCode.unknown_server_error),
])
async def test_a_failed_write_is_answered_as_kafkas_group_coordinator_does(
        broken: Broken, stored: ErrorCode, answered: ErrorCode) -> None:
    broken.log.error = lambda: KafkaError(stored)
    broken.log.break_again()
    with pytest.raises(KafkaError) as refused:
        await join(broken.coord, "a")
    assert refused.value.code is answered
