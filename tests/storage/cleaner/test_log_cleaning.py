"""Whole cleaning passes over a compacted LocalPartitionLog: Kafka's key, tombstone and
transaction rules, the swap, and reopening."""

import time
from dataclasses import replace

import pytest

from protocol.errors import ErrorCode, KafkaError, RecordValidationError
from protocol.record_batch import CompressionType
from protocol.records import Record, build_batch
from storage.api import AppendOrigin, IsolationLevel
from storage.log_messages import BARRIER
from tests.storage.cleaner.helpers import clean, compressed, end_txn, kv, latest, open_log, records, write_marker


async def test_latest_value_of_each_key_stays_at_its_offset(tmp_path):
    plog = open_log(tmp_path / "t-0")
    writes = []
    for i in range(60):
        key = b"k%d" % (i % 7)
        info = await plog.append(kv(key, b"v%d" % i))
        writes.append((info.base_offset, key, b"v%d" % i))
    before = plog.size_bytes
    assert await clean(plog)
    got = await records(plog)
    # closed segments keep only the latest of each key among them; the active one is untouched
    active_base = plog.active.base_offset
    want = latest([w for w in writes if w[0] < active_base])
    expect = sorted([(o, k, v) for k, (o, v) in want.items() if o < active_base] +
                    [w for w in writes if w[0] >= active_base])
    assert got == expect
    assert plog.size_bytes < before
    assert plog.log_end_offset == 60
    await plog.close()
    reopened = open_log(tmp_path / "t-0", clean=True)
    assert await records(reopened) == expect
    await reopened.close()


async def test_tombstones_stay_delete_retention_ms_after_cleaning_then_go(tmp_path):
    plog = open_log(tmp_path / "t-0", delete_retention_ms=1000)
    for i in range(10):
        await plog.append(kv(b"a", b"%d" % i))
    await plog.append(kv(b"a", None))
    for i in range(20):
        await plog.append(kv(b"b%d" % i, b"x" * 20))
    assert await clean(plog, now_ms=10_000)
    tomb = [r for r in await records(plog) if r[1] == b"a"]
    assert tomb == [(10, b"a", None)]
    for i in range(10):  # more dirt, so that a second pass is due
        await plog.append(kv(b"b%d" % i, b"y" * 20))
    assert await clean(plog, now_ms=10_500)  # within delete.retention.ms of the first cleaning
    assert [r for r in await records(plog) if r[1] == b"a"] == [(10, b"a", None)]
    for i in range(10):
        await plog.append(kv(b"b%d" % i, b"z" * 20))
    assert await clean(plog, now_ms=11_001)
    assert [r for r in await records(plog) if r[1] == b"a"] == []
    await plog.close()


async def test_keyless_records_are_refused_on_compacted_topics(tmp_path):
    plog = open_log(tmp_path / "t-0")
    with pytest.raises(KafkaError) as info:
        await plog.append(kv(None, b"v"))  # type: ignore[arg-type]
    assert info.value.code is ErrorCode.invalid_record
    # Kafka names each refused record by its index in the batch (KIP-467 record_errors)
    mixed = [Record(key=None if i % 3 == 0 else b"k%d" % i, value=b"v", timestamp=1000) for i in range(7)]
    plain = bytes(build_batch(mixed))
    for batch in (plain, compressed(plain, CompressionType.LZ4)):
        with pytest.raises(RecordValidationError) as refused:
            await plog.append(batch)
        assert [i for i, _ in refused.value.record_errors] == [0, 3, 6]
        assert "without key" in refused.value.record_errors[0][1]
    assert plog.log_end_offset == 0
    await plog.close()


async def test_aborted_records_go_and_markers_stay_until_safe(tmp_path):
    plog = open_log(tmp_path / "t-0", delete_retention_ms=1000)
    await plog.append(kv(b"a", b"committed", pid=1, epoch=0, seq=0, txn=True))  # 0
    await plog.append(kv(b"a", b"aborted", pid=2, epoch=0, seq=0, txn=True))  # 1
    await write_marker(plog, 1, commit=True)  # 2
    await write_marker(plog, 2, commit=False)  # 3
    await plog.append(kv(b"b", b"plain"))  # 4
    for i in range(12):
        await plog.append(kv(b"f%d" % i, b"filler-%d" % i))
    committed = await records(plog, IsolationLevel.READ_COMMITTED)
    assert (1, b"a", b"aborted") not in committed
    assert await clean(plog, now_ms=10_000)
    for level in IsolationLevel:
        got = await records(plog, level)
        assert (0, b"a", b"committed") in got
        assert all(value != b"aborted" for _, _, value in got)
    await plog.close()


async def test_a_live_idempotent_producer_keeps_writing_after_its_batches_are_cleaned(tmp_path):
    plog = open_log(tmp_path / "t-0")
    for seq in range(30):
        await plog.append(kv(b"same", b"v%d" % seq, pid=5, epoch=0, seq=seq))
    assert await clean(plog)
    info = await plog.append(kv(b"same", b"next", pid=5, epoch=0, seq=30))
    assert info.base_offset == 30
    with pytest.raises(KafkaError) as refused:  # sequence checks still hold
        await plog.append(kv(b"same", b"gap", pid=5, epoch=0, seq=40))
    assert refused.value.code is ErrorCode.out_of_order_sequence_number
    await plog.close()


async def test_markers_are_coordinator_writes(tmp_path):
    plog = open_log(tmp_path / "t-0")
    await plog.append(kv(b"a", b"1", pid=1, epoch=0, seq=0, txn=True))
    await plog.append(end_txn(1, True), AppendOrigin.COORDINATOR)
    assert plog.last_stable_offset == 2
    await plog.close()


async def test_min_compaction_lag_holds_new_segments_and_max_lag_forces_a_pass(tmp_path):
    plog = open_log(tmp_path / "t-0", min_compaction_lag_ms=5_000)
    for i in range(40):
        await plog.append(kv(b"k%d" % (i % 3), b"v%d" % i, ts=1000 + i))
    assert not await clean(plog, now_ms=5_500)  # every record is younger than min.compaction.lag.ms
    assert await clean(plog, now_ms=60_000)
    for i in range(12):  # a little dirt after a clean part: a dirty ratio well under 0.99
        await plog.append(kv(b"k%d" % (i % 3), b"w%d" % i, ts=2000 + i))
    await plog.update_config(replace(plog.config, min_cleanable_dirty_ratio=0.99))
    assert not await clean(plog, now_ms=60_000)
    await plog.update_config(replace(plog.config, max_compaction_lag_ms=10_000))
    assert await clean(plog, now_ms=60_000)  # the oldest dirty record waited past max.compaction.lag.ms
    await plog.close()


async def test_a_ratio_of_one_cleans_only_what_max_lag_forces_even_a_log_all_dirty(tmp_path):
    # Kafka cleans above min.cleanable.dirty.ratio, not at it: 1.0 holds the cleaner off
    plog = open_log(tmp_path / "t-0", min_cleanable_dirty_ratio=1.0)
    for i in range(40):
        await plog.append(kv(b"k%d" % (i % 3), b"v%d" % i, ts=1000 + i))
    assert not await clean(plog, now_ms=60_000)  # never cleaned: the dirty ratio is exactly 1.0
    await plog.update_config(replace(plog.config, max_compaction_lag_ms=10_000))
    assert await clean(plog, now_ms=60_000)
    await plog.close()


async def batches(plog):  # type: ignore[no-untyped-def]
    """(base offset, is control, record count) of every batch from the log start."""
    from protocol.record_batch import iter_batches

    out, offset = [], plog.log_start_offset
    while offset < plog.log_end_offset:
        info = await plog.read(offset, 1 << 30)
        if not info.records:
            break
        for _, h in iter_batches(b"".join(info.records)):
            out.append((h.base_offset, h.is_control, h.records_count))
            offset = h.last_offset + 1
    return out


async def test_a_marker_goes_only_after_its_records_and_delete_retention_ms(tmp_path):
    plog = open_log(tmp_path / "t-0", delete_retention_ms=1000)
    await plog.append(kv(b"a", b"in-txn", pid=1, epoch=0, seq=0, txn=True))  # 0
    await write_marker(plog, 1, commit=True)  # 1
    await plog.append(kv(b"a", b"newer"))  # 2: supersedes the transaction's only record
    for i in range(10):
        await plog.append(kv(b"f%d" % i, b"x" * 30))

    async def dirty_and_clean(now_ms: int) -> list[tuple[int, bool, int]]:
        for i in range(10):
            await plog.append(kv(b"f%d" % i, b"y%d" % now_ms + b"x" * 30))
        assert await clean(plog, now_ms=now_ms)
        return [b for b in await batches(plog) if b[0] < 3]

    # The record goes; its producer is live, so its last batch stays, emptied, and with it the
    # marker (the emptied batch still belongs to the transaction, as in Kafka's cleaner).
    assert await dirty_and_clean(10_000) == [(0, False, 0), (1, True, 1), (2, False, 1)]
    assert await dirty_and_clean(11_000) == [(0, False, 0), (1, True, 1), (2, False, 1)]
    # Once the producer expires its emptied batch goes; the marker then gets a delete horizon of
    # now + delete.retention.ms and goes only after it.
    later = int(time.time() * 1000) + 2 * 86_400_000
    await plog.ask(BARRIER)  # the owner is idle: the producer state may be changed right here
    plog.txns.remove_expired_producers(later)
    assert await dirty_and_clean(20_000) == [(1, True, 1), (2, False, 1)]
    assert await dirty_and_clean(20_500) == [(1, True, 1), (2, False, 1)]
    assert await dirty_and_clean(21_400) == [(1, True, 1), (2, False, 1)]
    assert await dirty_and_clean(21_501) == [(2, False, 1)]
    await plog.close()


async def test_a_partition_whose_pass_fails_is_left_uncleanable(tmp_path, caplog):
    from concurrent.futures import ThreadPoolExecutor

    from storage.cleaner.log_cleaner import CleanerConfig, LogCleaner
    from storage.log_manager import LogManager

    logs = LogManager(tmp_path, {"segment.bytes": 300, "cleanup.policy": "compact",
                                 "min.cleanable.dirty.ratio": 0.01})
    logs.load()
    logs.start()
    await logs.create_topic("t", 1)
    plog = logs.get_log(__import__("storage.api", fromlist=["TopicPartition"]).TopicPartition("t", 0))
    for i in range(30):
        await plog.append(kv(b"k%d" % (i % 4), b"v%d" % i))
    cleaner = LogCleaner(logs, CleanerConfig(backoff_ms=10, dedupe_buffer_size=1 << 20),
                         executor=lambda: ThreadPoolExecutor(1))
    first = plog.segments[0].log_path
    first.write_bytes(first.read_bytes()[:20] + b"\xff" * 40 + first.read_bytes()[60:])  # a torn header
    assert await cleaner.clean_dirtiest() is None
    assert cleaner.uncleanable == {"t-0"} and cleaner.stats.failures == 1
    assert await cleaner.clean_dirtiest() is None  # not tried again
    assert cleaner.stats.failures == 1
    await cleaner.stop()
    await logs.close()


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_a_rewritten_batch_keeps_its_codec_producer_fields_and_a_valid_crc(codec):
    from protocol.record_batch import RecordBatchHeader, iter_batches
    from protocol.records import Record, build_batch, read_records
    from storage.cleaner.batch_filter import build_filtered_batch, decode_raw_records

    plain = bytes(build_batch([Record(key=b"k%d" % i, value=b"v%d" % i, timestamp=100 + i) for i in range(5)],
                              base_offset=40, producer_id=7, producer_epoch=2, base_sequence=11))
    packed = compressed(plain, codec)
    source = RecordBatchHeader.parse(packed)
    kept = [r for r in decode_raw_records(packed, source) if r.key in (b"k1", b"k3")]
    out = build_filtered_batch(packed, source, kept, None)
    ((_, header),) = list(iter_batches(out))  # iter_batches checks the CRC
    assert (header.compression, header.producer_id, header.producer_epoch, header.base_sequence) == (codec, 7, 2, 11)
    assert (header.base_offset, header.last_offset_delta, header.records_count) == (40, 4, 2)
    ((_, records),) = list(read_records(out))
    got = [(r.offset, r.key, r.value, r.timestamp) for r in records]
    assert got == [(41, b"k1", b"v1", 101), (43, b"k3", b"v3", 103)]
