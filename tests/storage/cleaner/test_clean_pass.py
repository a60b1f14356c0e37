"""A pass's reach and its byte-for-byte copies: log.cleaner.dedupe.buffer.size bounds how far one
pass cleans, long keys are mapped by digest, and kept batches are not re-encoded."""

from protocol.records import Record, build_batch
from storage.api import AppendOrigin
from storage.cleaner.clean_pass import run_clean_pass
from tests.storage.cleaner.helpers import clean, kv, latest, open_log, records


async def test_a_pass_cleans_as_far_as_the_key_map_fits_and_the_next_goes_on(tmp_path):
    plog = open_log(tmp_path / "t-0")
    writes = []
    for i in range(80):  # 40 keys, two versions each: the first half of the log holds keys 0-19
        key = b"k%d" % (i // 2)
        info = await plog.append(kv(key, b"v%d" % i))
        writes.append((info.base_offset, key, b"v%d" % i))
    plan = await plog.plan_cleaning(10_000, 10)
    assert plan is not None
    result = run_clean_pass(plan.task)
    # ten keys fill the map: the pass stops at the first batch after it is full
    assert 19 <= result.end_offset <= 22
    await plog.swap_cleaned(result)
    assert plog.first_dirty_offset == result.end_offset
    cleaned = {o for o, _, _ in await records(plog)}
    assert not any(o % 2 == 0 and o + 1 < result.end_offset for o in cleaned)  # older versions gone
    assert {o for o, _, _ in writes if o >= result.end_offset} <= cleaned  # nothing past it touched
    while await clean(plog, capacity=10):
        pass
    active = plog.active.base_offset
    want = sorted((o, k, v) for k, (o, v) in latest([w for w in writes if w[0] < active]).items())
    assert await records(plog) == want + [w for w in writes if w[0] >= active]
    await plog.close()


async def test_keys_longer_than_the_map_keeps_are_cleaned_by_their_digest(tmp_path):
    plog = open_log(tmp_path / "t-0")
    writes = []
    for round_ in range(3):  # three passes: the later ones check the clean section against the map
        for i in range(30):
            key = b"long-key-%d-" % (i % 5) + b"x" * 100
            info = await plog.append(kv(key, b"r%d-%d" % (round_, i)))
            writes.append((info.base_offset, key, b"r%d-%d" % (round_, i)))
        assert await clean(plog)
    active = plog.active.base_offset
    want = sorted((o, k, v) for k, (o, v) in latest([w for w in writes if w[0] < active]).items())
    assert await records(plog) == want + [w for w in writes if w[0] >= active]
    await plog.close()


async def test_a_batch_whose_records_all_stay_is_copied_as_it_was(tmp_path):
    plog = open_log(tmp_path / "t-0", segment_bytes=1000)
    kept = bytes(build_batch([Record(key=b"a%d" % i, value=b"v", timestamp=1000 + i) for i in range(5)]))
    await plog.append(kept, AppendOrigin.CLIENT)
    for i in range(40):
        await plog.append(kv(b"b", b"%d" % i))
    assert await clean(plog)
    stored = b"".join((await plog.read(0, 1 << 20)).records)
    # byte for byte but the base offset, which the log assigned
    assert stored[8 : len(kept)] == kept[8:]
    await plog.close()


async def test_a_pass_keeping_more_batches_than_one_writev_takes(tmp_path):
    """More kept batches than IOV_MAX (1024) in one write chunk: writev(2) refuses that many
    buffers (EINVAL), which failed librdkafka's 0077-compaction topic (40,000 small batches) and
    left it uncleaned until a restart. The file system writes them IOV_MAX at a time."""
    plog = open_log(tmp_path / "t-0", segment_bytes=400_000)
    writes = []
    for i in range(3000):  # ~100 bytes a batch: one segment of ~3000 batches, all kept but one
        key = b"k%d" % (i if i else 1)
        info = await plog.append(kv(key, b"v%d" % i))
        writes.append((info.base_offset, key, b"v%d" % i))
    await plog.append(kv(b"roll", b"x" * 400_000))  # the first segment is closed and cleanable
    assert len(plog.segments) >= 2
    assert await clean(plog)
    active = plog.active.base_offset
    want = sorted((o, k, v) for k, (o, v) in latest([w for w in writes if w[0] < active]).items())
    assert len(want) == 2999
    assert (await records(plog))[: len(want)] == want
    await plog.close()
