"""LogManager: topic metadata in topics.json survives restarts and crashes; topic name rules."""

import json
import uuid

import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.records import Record, build_batch
from storage.api import TopicPartition
from storage.fs import LOCAL_FS
from storage.log_manager import LogManager, validate_topic_name
from tests.storage.faulty_fs import FaultyFileSystem

DEFAULTS = {"segment.bytes": 1 << 20, "retention.ms": -1}


async def started(data_dir, fs=LOCAL_FS) -> LogManager:
    manager = LogManager(data_dir, DEFAULTS, fs=fs)
    manager.load()
    manager.start()
    return manager


def crash(manager: LogManager) -> None:
    for plog in manager.logs.values():
        plog._task.cancel()
        plog.close_files()


async def test_topics_survive_a_clean_restart(tmp_path):
    m = await started(tmp_path)
    a = await m.create_topic("orders", 3, {"retention.ms": "1000", "message.timestamp.type": "LogAppendTime"})
    await m.create_topic("audit", 1)
    await m.get_log(TopicPartition("orders", 2)).append(bytes(build_batch([Record(value=b"v", timestamp=1)])))
    await m.close()
    again = await started(tmp_path)
    assert set(again.topics) == {"orders", "audit"}
    assert again.topics["orders"].topic_id == a.topic_id
    assert again.topics["orders"].configs == {"retention.ms": "1000", "message.timestamp.type": "LogAppendTime"}
    plog = again.get_log(TopicPartition("orders", 2))
    assert plog.log_end_offset == 1
    assert plog.config.retention_ms == 1000 and plog.config.message_timestamp_type == "LogAppendTime"
    await again.close()


async def test_every_change_is_durable_without_a_clean_shutdown(tmp_path):
    m = await started(tmp_path)
    await m.create_topic("a", 1)
    await m.create_topic("b", 2)
    await m.create_partitions("b", 5)
    await m.alter_configs("a", {"retention.bytes": "4096"})
    await m.delete_topic("b")
    crash(m)
    again = await started(tmp_path)
    assert list(again.topics) == ["a"]
    assert again.topics["a"].configs == {"retention.bytes": "4096"}
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["a-0"]
    assert (await again.create_topic("b", 1)).topic_id != again.topics["a"].topic_id  # the name is free again
    await again.close()


async def test_create_partitions_adds_logs_that_reload(tmp_path):
    m = await started(tmp_path)
    await m.create_topic("t", 1)
    await m.create_partitions("t", 4)
    await m.close()
    again = await started(tmp_path)
    assert again.topics["t"].partitions == 4
    assert {tp.partition for tp in again.logs} == {0, 1, 2, 3}
    await again.close()


async def test_topics_json_is_replaced_atomically(tmp_path):
    m = await started(tmp_path)
    await m.create_topic("t", 1)
    (tmp_path / "topics.json.tmp").write_text('{"version": 1, "topics": [')  # a torn write
    await m.close()
    doc = json.loads((tmp_path / "topics.json").read_text())
    assert [t["name"] for t in doc["topics"]] == ["t"]
    uuid.UUID(doc["topics"][0]["topic_id"])
    again = await started(tmp_path)
    assert list(again.topics) == ["t"]
    await again.close()


async def test_clean_shutdown_marker(tmp_path):
    m = await started(tmp_path)
    await m.close()
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    again = await started(tmp_path)
    assert not (tmp_path / ".kafka_cleanshutdown").exists()  # consumed at load: a crash now is unclean
    await again.close()


async def test_create_errors(tmp_path):
    m = await started(tmp_path)
    await m.create_topic("t", 1)
    cases = [("t", 1, {}, ErrorCode.topic_already_exists), ("u", 0, {}, ErrorCode.invalid_partitions),
             ("u", 1, {"retention.ms": "soon"}, ErrorCode.invalid_config),
             ("bad/name", 1, {}, ErrorCode.invalid_topic_exception)]
    for name, partitions, configs, code in cases:
        with pytest.raises(KafkaError) as info:
            await m.create_topic(name, partitions, configs)
        assert info.value.code is code, name
    with pytest.raises(KafkaError) as info:
        await m.create_partitions("t", 1)
    assert info.value.code is ErrorCode.invalid_partitions
    with pytest.raises(KafkaError) as info:
        m.get_log(TopicPartition("t", 1))
    assert info.value.code is ErrorCode.unknown_topic_or_partition
    await m.create_topic("v", 1, validate_only=True)
    assert "v" not in m.topics
    await m.close()


@pytest.mark.parametrize(("op", "suffix"), [("write", "topics.json.tmp"), ("open", ".timeindex")])
async def test_a_topic_that_cannot_be_written_leaves_nothing_behind(tmp_path, op, suffix):
    fs = FaultyFileSystem()
    m = await started(tmp_path, fs)
    await m.create_topic("a", 1)
    fs.inject(op=op, suffix=suffix)
    for change in (lambda: m.create_topic("b", 2), lambda: m.create_partitions("a", 3)):
        with pytest.raises(KafkaError) as info:
            await change()
        assert info.value.code is ErrorCode.kafka_storage_error
        fs.inject(op=op, suffix=suffix)
    fs.clear()
    assert (list(m.topics), list(m.logs)) == (["a"], [TopicPartition("a", 0)])
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == ["a-0", "topics.json"]
    await m.create_topic("b", 2)
    await m.close()
    again = await started(tmp_path)
    assert again.topics["b"].partitions == 2 and again.topics["a"].partitions == 1
    await again.close()


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "with space", "slash/", "ünïcode", "tab\t"])
def test_invalid_topic_names(name):
    with pytest.raises(KafkaError) as info:
        validate_topic_name(name)
    assert info.value.code is ErrorCode.invalid_topic_exception


@pytest.mark.parametrize("name", ["a", "A.b_c-1", "a" * 249, "..."])
def test_valid_topic_names(name):
    validate_topic_name(name)


async def test_a_topic_is_found_by_id_through_its_changes(tmp_path):
    # topic_by_id remembers where an id was found (Produce v13 asks per request), and checks it
    m = await started(tmp_path)
    first = await m.create_topic("t", 1)
    assert m.topic_by_id(first.topic_id) is first
    await m.create_partitions("t", 3)
    assert m.topic_by_id(first.topic_id) == m.topics["t"] and m.topics["t"].partitions == 3
    await m.delete_topic("t")
    assert m.topic_by_id(first.topic_id) is None
    again = await m.create_topic("t", 1)
    assert m.topic_by_id(first.topic_id) is None and m.topic_by_id(again.topic_id) is again
    assert m.topic_by_id(uuid.uuid4()) is None
    await m.close()
