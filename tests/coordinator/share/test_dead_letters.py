"""Dead letters of share groups (KIP-1191): the ARCHIVING state of partition_state.py, and the
SharePartitionManager writing them with DeadLetterWriter into a real LogManager's topic: Kafka's
record layout and headers, the topic's rules, and dead letters resumed from persisted ARCHIVING
state after a restart."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest

from coordinator.share.dead_letters import DeadLetterSettings, DeadLetterWriter
from coordinator.share.partition_state import AcknowledgeType, LogBatch, RecordState, SharePartitionState, StateBatch
from coordinator.share.partitions import ShareGroupSettings, SharePartitionManager
from coordinator.share.state_log import SharePartitionKey, ShareStateLog, StoredShareState
from protocol.records import Record, build_batch, read_records
from storage.api import TopicPartition
from storage.log_manager import LogManager

REJECT, RELEASE, GAP = (int(AcknowledgeType.REJECT),), (int(AcknowledgeType.RELEASE),), (int(AcknowledgeType.GAP),)


def acquired(dlq: bool, records: int = 4, limit: int = 2) -> SharePartitionState:
    state = SharePartitionState(0, delivery_count_limit=limit, max_in_flight=100)
    state.dead_letter_queue = dlq
    state.acquire_new([LogBatch(0, records - 1, True)], "m", 0, 1000, records)
    return state


def test_reject_and_delivery_limit_hold_records_archiving_until_their_dead_letters_are_written() -> None:
    state = acquired(True)
    state.acknowledge("m", 0, 0, REJECT, 0, 1000)
    state.acknowledge("m", 1, 1, GAP, 0, 1000)  # a gap has no record: archived, no dead letter
    state.acknowledge("m", 2, 3, RELEASE, 0, 1000)
    state.acquire_available("m", 0, 1000, 10)
    state.acknowledge("m", 2, 2, RELEASE, 0, 1000)  # second delivery of 2: the limit
    assert state.expire_locks(5000) == 1  # 3 too, by its lock
    assert [(o, s) for o, s, _ in state.states()] == [
        (0, RecordState.ARCHIVING), (1, RecordState.ARCHIVED), (2, RecordState.ARCHIVING), (3, RecordState.ARCHIVING)]
    assert [tuple(r) for r in state.dead_letters()] == [(0, 0, 1, True), (2, 3, 2, False)]
    assert state.start_offset == 0 and state.acquire_available("m", 0, 1000, 10) == []
    state.archive_dead_letters(0, 3)
    assert state.start_offset == 4 and state.dead_letters() == []


def test_without_a_dead_letter_queue_records_are_archived_at_once() -> None:
    state = acquired(False)
    state.acknowledge("m", 0, 1, REJECT, 0, 1000)
    assert state.start_offset == 2 and state.dead_letters() == []


def test_archiving_survives_a_restart_and_a_held_record_at_the_limit_becomes_a_dead_letter() -> None:
    state = acquired(True)
    state.acknowledge("m", 0, 0, REJECT, 0, 1000)
    state.acknowledge("m", 1, 3, RELEASE, 0, 1000)
    state.acquire_available("m", 0, 1000, 1)  # offset 1, second delivery, in flight at the crash
    snapshot = state.snapshot()
    assert StateBatch(0, 0, RecordState.ARCHIVING, 1) in snapshot
    for dlq, at_limit in ((True, RecordState.ARCHIVING), (False, RecordState.ARCHIVED)):
        back = SharePartitionState.restore(state.start_offset, snapshot, delivery_count_limit=2, max_in_flight=100,
                                           dead_letter_queue=dlq)
        assert [s for _, s, _ in back.states()][:2] == [RecordState.ARCHIVING, at_limit]
    back = SharePartitionState.restore(0, snapshot, delivery_count_limit=2, max_in_flight=100, dead_letter_queue=True)
    assert [tuple(r) for r in back.dead_letters()] == [(0, 0, 1, True), (1, 1, 2, False)]


# -- the manager and the writer over a real log ------------------------------------------------------

class Setup:
    def __init__(self, path: Path, settings: ShareGroupSettings, dlq: DeadLetterSettings) -> None:
        self.path, self.group_settings, self.dlq = path, settings, dlq

    async def start(self) -> Setup:
        self.logs = LogManager(self.path, {})
        self.logs.load()
        self.logs.start()
        if "st" not in self.logs.topics:
            await self.logs.create_topic("st", 2)
            for partition in (0, 1):
                batch = build_batch([Record(key=b"k%d" % i, value=b"v%d-%d" % (partition, i), headers=(("h", b"x"),))
                                     for i in range(3)])
                await self.logs.get_log(TopicPartition("st", partition)).append(bytes(batch))
        self.manager = SharePartitionManager(self.logs, ShareStateLog(self.logs, 1), lambda _: self.group_settings,
                                             lambda: 1000, DeadLetterWriter(self.logs, lambda: self.dlq, lambda: 777))
        await self.manager.load()
        # as the group coordinator initializes them when they are first assigned
        fresh = [self.key(p) for p in (0, 1) if self.manager.stored_state(self.key(p)) is None]
        await self.manager.initialize(fresh, 0, 0)
        return self

    def key(self, partition: int) -> SharePartitionKey:
        return SharePartitionKey("g", self.logs.topics["st"].topic_id, partition)

    async def reject(self, partition: int, first: int, last: int) -> None:
        p = await self.manager.partition(self.key(partition), TopicPartition("st", partition))
        await self.manager.acquire(p, "m", 10, 1 << 20, True)
        await self.manager.acknowledge(p, "m", [(first, last, REJECT)])

    async def letters(self, topic: str = "dlq.st") -> list[Record]:
        out: list[Record] = []
        for partition in range(self.logs.topics[topic].partitions):
            info = await self.logs.get_log(TopicPartition(topic, partition)).read(0, 1 << 20)
            for _, records in read_records(b"".join(bytes(r) for r in info.records)):
                out += records
        return out

    async def close(self) -> None:
        await self.logs.close()


@pytest.fixture
async def setup(tmp_path: Path):  # type: ignore[no-untyped-def]
    s = await Setup(tmp_path, ShareGroupSettings(delivery_count_limit=2, auto_offset_reset="earliest",
                                                 dlq_topic="dlq.st", dlq_copy_record=True),
                    DeadLetterSettings()).start()
    yield s
    await s.close()


async def test_rejected_records_are_written_with_kafkas_headers_and_the_original_key_and_value(setup: Setup) -> None:
    await setup.logs.create_topic("dlq.st", 1, {"errors.deadletterqueue.group.enable": "true"})
    await setup.reject(1, 0, 1)
    letters = await setup.letters()
    assert [(r.key, r.value, r.timestamp, dict(r.headers)) for r in letters] == [
        (b"k%d" % i, b"v1-%d" % i, 777, {
            "__dlq.errors.topic": b"st", "__dlq.errors.partition": b"1", "__dlq.errors.offset": b"%d" % i,
            "__dlq.errors.group": b"g", "__dlq.errors.delivery.count": b"1",
            "__dlq.errors.message": b"Offset rejected by client."}) for i in (0, 1)]
    p = setup.manager.partitions[setup.key(1)]
    assert p.state.start_offset == 2 and setup.manager.stored_state(setup.key(1)).start_offset == 2  # type: ignore[union-attr]


async def test_without_copy_the_dead_letter_has_no_key_or_value_and_goes_to_partition_mod_count(setup: Setup) -> None:
    await setup.logs.create_topic("dlq.st", 3, {"errors.deadletterqueue.group.enable": "true"})
    setup.group_settings = ShareGroupSettings(auto_offset_reset="earliest", dlq_topic="dlq.st")
    await setup.reject(1, 2, 2)
    info = await setup.logs.get_log(TopicPartition("dlq.st", 1)).read(0, 1 << 20)
    [(_, [letter])] = list(read_records(b"".join(bytes(r) for r in info.records)))
    assert (letter.key, letter.value, dict(letter.headers)["__dlq.errors.offset"]) == (None, None, b"2")


@pytest.mark.parametrize(("topic", "configs", "message"), [
    ("dlq.st", None, "DLQ topic does not exist and auto create is disabled on cluster for share group: g, topic: "
                     "dlq.st."),
    ("dlq.st", {}, "DLQ is not enabled on configured DLQ topic for share group: g, topic: dlq.st."),
    ("other", {"errors.deadletterqueue.group.enable": "true"},
     "Configured DLQ topic name does not comply with the DLQ topic prefix in share group: g, topic: other, "
     "prefix: dlq."),
])
async def test_an_unusable_topic_archives_without_dead_letters(setup: Setup, caplog: pytest.LogCaptureFixture,
                                                               topic: str, configs: dict[str, str] | None,
                                                               message: str) -> None:
    if configs is not None:
        await setup.logs.create_topic(topic, 1, configs)
    setup.group_settings = ShareGroupSettings(auto_offset_reset="earliest", dlq_topic=topic)
    with caplog.at_level(logging.WARNING):
        await setup.reject(0, 0, 2)
    assert message in caplog.text
    assert setup.manager.partitions[setup.key(0)].state.start_offset == 3
    assert configs is None or await setup.letters(topic) == []


async def test_auto_create_makes_the_topic_with_the_dlq_config(setup: Setup) -> None:
    setup.dlq = DeadLetterSettings(auto_create_topics=True, num_partitions=2)
    await setup.reject(0, 1, 1)
    meta = setup.logs.topics["dlq.st"]
    assert (meta.partitions, dict(meta.configs)) == (2, {"errors.deadletterqueue.group.enable": "true",
                                                         "message.timestamp.type": "CreateTime"})
    assert [dict(r.headers)["__dlq.errors.offset"] for r in await setup.letters()] == [b"1"]


async def test_archiving_state_left_by_a_crash_is_written_once_after_the_restart(setup: Setup) -> None:
    await setup.logs.create_topic("dlq.st", 1, {"errors.deadletterqueue.group.enable": "true"})
    # as a kill -9 leaves it: ARCHIVING persisted, its dead letters not written yet
    await ShareStateLog(setup.logs, 1).write(setup.key(0), StoredShareState(0, 0, (
        StateBatch(0, 0, RecordState.ACKNOWLEDGED, 1), StateBatch(1, 2, RecordState.ARCHIVING, 2))))
    await setup.close()
    await setup.start()
    assert setup.manager.dead_letters_due == {setup.key(0)}
    await setup.manager.send_due_dead_letters()
    await setup.manager.send_due_dead_letters()
    assert [(dict(r.headers)["__dlq.errors.offset"], dict(r.headers)["__dlq.errors.message"])
            for r in await setup.letters()] == [(b"1", b"Offset delivery count exceeded the threshold."),
                                                (b"2", b"Offset delivery count exceeded the threshold.")]
    stored = setup.manager.stored_state(setup.key(0))
    assert stored is not None and (stored.start_offset, stored.batches) == (3, ())
    await setup.close()
    await setup.start()
    assert setup.manager.dead_letters_due == set()


async def test_dead_letters_of_a_deleted_topic_are_dropped(setup: Setup) -> None:
    gone = SharePartitionKey("g", uuid.UUID(int=9), 0)
    archiving = StoredShareState(0, 0, (StateBatch(0, 0, RecordState.ARCHIVING, 1),))
    await ShareStateLog(setup.logs, 1).write(gone, archiving)
    await setup.close()
    await setup.start()
    assert setup.manager.dead_letters_due == {gone}
    await setup.manager.send_due_dead_letters()
    assert setup.manager.dead_letters_due == set() and "dlq.st" not in setup.logs.topics
