"""Transactions across cleaning passes. Two regressions, both losing committed records: an aborted
transaction's index entry outlives the pass that walked its marker, and the next pass's offset map,
starting past that marker, took the producer's later committed transactions for the aborted one;
and the offset map ran past the LSO into open transactions."""

import random

import pytest

from protocol.records import Record, build_batch
from storage.api import IsolationLevel
from tests.storage.cleaner.helpers import clean, kv, open_log, records, write_marker

TXN, PLAIN = 7, 9


def _batch(pid: int, seq: int, pairs: list[tuple[bytes, bytes]], txn: bool) -> bytes:
    return bytes(build_batch([Record(key=k, value=v, timestamp=1000) for k, v in pairs], producer_id=pid,
                             producer_epoch=0, base_sequence=seq, transactional=txn))


async def test_a_committed_transaction_after_an_aborted_one_survives_the_next_pass(tmp_path):
    plog = open_log(tmp_path / "t-0", delete_retention_ms=0)
    aborted = await plog.append(_batch(TXN, 0, [(b"a", b"aborted"), (b"b", b"aborted")], True))
    await write_marker(plog, TXN, commit=False)
    for i in range(12):  # roll past the marker
        await plog.append(kv(b"f%d" % (i % 3), b"x" * 30))
    assert await clean(plog, now_ms=10_000)  # the aborted records go; the marker and its entry stay
    committed = await plog.append(_batch(TXN, 2, [(b"a", b"committed"), (b"b", b"committed")], True))
    await write_marker(plog, TXN, commit=True)
    for i in range(12):
        await plog.append(kv(b"f%d" % (i % 3), b"y" * 30))
    assert plog.first_dirty_offset > aborted.base_offset + 2  # the next map starts past the ABORT marker
    assert await clean(plog, now_ms=10_001)
    got = {(o, k, v) for o, k, v in await records(plog, IsolationLevel.READ_COMMITTED)}
    assert {(committed.base_offset, b"a", b"committed"), (committed.base_offset + 1, b"b", b"committed")} <= got
    assert all(v != b"aborted" for _, _, v in got)
    await plog.close()


async def test_an_open_transaction_past_the_lso_does_not_supersede_a_committed_value(tmp_path):
    """The LSO can lie inside a closed segment (a transaction open across a roll): the offset map
    stops there, or the open transaction's record would clean away the committed one it may never
    replace."""
    plog = open_log(tmp_path / "t-0", delete_retention_ms=0)
    await plog.append(_batch(TXN, 0, [(b"a", b"committed")], True))  # 0
    await write_marker(plog, TXN, commit=True)  # 1
    for i in range(8):
        await plog.append(kv(b"f%d" % (i % 3), b"x" * 30))
    opened = await plog.append(_batch(TXN + 1, 0, [(b"a", b"open")], True))  # stays open over the rolls
    for i in range(12):
        await plog.append(kv(b"f%d" % (i % 3), b"x" * 30))
    lso = plog.last_stable_offset
    bases = [s.base_offset for s in plog.segments]
    assert lso == opened.base_offset and lso not in bases and bases[-2] > lso  # inside a closed segment
    assert await clean(plog, now_ms=10_000)
    await write_marker(plog, TXN + 1, commit=False)
    for i in range(12):
        await plog.append(kv(b"f%d" % (i % 3), b"y" * 30))
    assert await clean(plog, now_ms=10_001)
    got = await records(plog, IsolationLevel.READ_COMMITTED)
    assert (0, b"a", b"committed") in got and all(v != b"open" for _, _, v in got)
    await plog.close()


@pytest.mark.parametrize("seed", range(12))
async def test_interleaved_transactions_cleaned_at_any_point_keep_each_keys_latest_committed_value(tmp_path, seed):
    """A transactional producer (every third transaction aborted) and an idempotent one interleaved
    as in tests/e2e/test_compaction_txn.py, with a cleaning pass after random appends."""
    rnd = random.Random(seed)
    plog = open_log(tmp_path / "t-0", delete_retention_ms=0, segment_bytes=rnd.choice([300, 600, 2048]))
    written: dict[int, tuple[bytes, bytes, str]] = {}
    seqs, now = {TXN: 0, PLAIN: 0}, 10_000

    async def put(pid: int, pairs: list[tuple[bytes, bytes]], kind: str) -> None:
        nonlocal now
        info = await plog.append(_batch(pid, seqs[pid], pairs, pid == TXN))
        seqs[pid] += len(pairs)
        written.update({info.base_offset + i: (k, v, kind) for i, (k, v) in enumerate(pairs)})
        if rnd.random() < 0.5:
            now += rnd.choice([0, 1, 100])
            await clean(plog, now_ms=now)

    for r in range(rnd.randint(4, 12)):
        kind = "aborted" if r % 3 == 1 else "committed"
        value = b"%s-%d" % (kind.encode(), r)
        for b in (0, 2):
            await put(TXN, [(b"t%d" % b, value), (b"t%d" % (b + 1), value)], kind)
            await put(PLAIN, [(b"p%d" % b, b"plain-%d" % r), (b"p%d" % (b + 1), b"plain-%d" % r)], "plain")
        await write_marker(plog, TXN, commit=kind == "committed")
    for i in range(rnd.randint(10, 60)):
        await put(PLAIN, [(b"f%d" % (i % 10), b"f%d" % i)], "plain")
    await clean(plog, now_ms=now + 1)
    got = await records(plog, IsolationLevel.READ_COMMITTED)
    for offset, key, value in got:
        assert written[offset] == (key, value, written[offset][2]) and written[offset][2] != "aborted"
    latest = {k: o for o, (k, _, kind) in sorted(written.items()) if kind != "aborted"}
    assert set(latest.values()) <= {o for o, _, _ in got}
    await plog.close()
