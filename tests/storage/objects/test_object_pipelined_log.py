"""One partition with several flushes in flight (storage/pg/in_flight.py, write_order.py): the
leader sequences its next appends while an earlier flush is stored and committed; the commits
and the answers follow the order of sequencing, and a flush that fails takes the ones behind it
down with it, so nothing is written after a gap and the producer's retries are written once. A
transaction's commit marker in flight holds the LSO until it is committed."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import asyncpg
import pytest

from protocol.errors import ErrorCode, KafkaError
from storage.api import AppendOrigin, IsolationLevel, LogAppendInfo
from storage.object_store import ObjectStore, ObjectStoreError
from storage.pg.object_commit import FlushSettings, ObjectGroupCommitter
from storage.pg.partition_log import PgPartitionLog
from tests.storage.objects.conftest import TP, StoreWrapper
from tests.storage.pg.conftest import SourceFactory
from tests.storage.pg.helpers import batch, marker, take, values


class _Held(StoreWrapper):
    """The real store, each PUT held until the test lets it go (or fail)."""

    def __init__(self, store: ObjectStore) -> None:
        super().__init__(store)
        self.waiting: list[tuple[str, asyncio.Future[bool]]] = []
        self.entered = asyncio.Event()
        self.stored: list[str] = []

    async def put(self, key: str, data: bytes | Sequence[bytes | memoryview]) -> None:
        go: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.waiting.append((key, go))
        self.entered.set()
        if not await go:
            raise ObjectStoreError(self.description, key, "connection refused (injected)")
        await self.store.put(key, data)
        self.stored.append(key)
        self.entered.set()

    async def stored_count(self, n: int) -> None:
        while len(self.stored) < n:
            self.entered.clear()
            await self.entered.wait()

    async def held(self, n: int) -> None:
        """Wait until n PUTs are held."""
        while len(self.waiting) < n:
            self.entered.clear()
            await self.entered.wait()


async def _log(source_factory: SourceFactory, store: ObjectStore, db: asyncpg.Pool,
               flush_ms: int = 2, inline_max_bytes: int | None = None) -> PgPartitionLog:
    source = await source_factory(1, object_store=store, flush=FlushSettings(flush_ms=flush_ms))
    if inline_max_bytes is not None:
        assert isinstance(source.committer, ObjectGroupCommitter)
        source.committer.inline_max_bytes = inline_max_bytes
    await source.create_topic("t", 1)
    return await take(db, source, TP)


def _submit(plog: PgPartitionLog, seq: int) -> asyncio.Future[LogAppendInfo]:
    answer = plog.submit(batch(1, tag=b"%d-" % seq, pid=9, epoch=0, seq=seq))
    assert isinstance(answer, asyncio.Future)  # queued: answered once committed
    return answer


async def test_two_flushes_of_one_partition_are_in_flight_and_commit_in_order(
    source_factory: SourceFactory, s3_store: ObjectStore, db: asyncpg.Pool
) -> None:
    held = _Held(s3_store)
    plog = await _log(source_factory, held, db)
    first = _submit(plog, 0)
    await held.held(1)
    second = _submit(plog, 1)
    await held.held(2)  # sequenced and flushed while the first's flush is in flight
    answered: list[int] = []
    first.add_done_callback(lambda _: answered.append(0))
    second.add_done_callback(lambda _: answered.append(1))
    held.waiting[1][1].set_result(True)  # the second's object is stored first ...
    await held.stored_count(1)
    await asyncio.sleep(0.2)  # (time for its statement to run, were it not held for the first's)
    assert not second.done()  # ... but it is not committed before the first
    assert await db.fetchval("SELECT next_offset FROM partitions WHERE partition = 0") == 0
    held.waiting[0][1].set_result(True)
    assert [(i.base_offset, i.duplicate) for i in await asyncio.gather(first, second)] == [(0, False), (1, False)]
    assert answered == [0, 1]
    assert [v for _, v in await values(plog)] == [b"0-0", b"1-0"]
    runs = await db.fetch("SELECT base_offset, object_key FROM batch_runs ORDER BY base_offset")
    assert [r["base_offset"] for r in runs] == [0, 1] and runs[0]["object_key"] != runs[1]["object_key"]


async def test_a_failed_flush_fails_the_flush_behind_it_and_the_retries_are_written_once(
    source_factory: SourceFactory, s3_store: ObjectStore, db: asyncpg.Pool
) -> None:
    held = _Held(s3_store)
    plog = await _log(source_factory, held, db)
    first = _submit(plog, 0)
    await held.held(1)
    second = _submit(plog, 1)
    await held.held(2)
    held.waiting[1][1].set_result(True)  # stored, but it follows a flush that fails
    held.waiting[0][1].set_result(False)
    for answer in (first, second):
        with pytest.raises(KafkaError) as err:
            await answer
        assert err.value.code is ErrorCode.kafka_storage_error
    assert await db.fetchval("SELECT next_offset FROM partitions WHERE partition = 0") == 0
    assert await db.fetchval("SELECT count(*) FROM batch_runs") == 0  # the second's run is not recorded
    # The producer retries both (taken together: one write after the log re-read its state), so
    # neither offset is taken twice.
    retries = [_submit(plog, 0), _submit(plog, 1)]
    await held.held(3)
    held.waiting[2][1].set_result(True)
    assert [(i.base_offset, i.duplicate) for i in await asyncio.gather(*retries)] == [(0, False), (1, False)]
    assert (await plog.append(batch(1, tag=b"1-", pid=9, epoch=0, seq=1))).duplicate
    assert [v for _, v in await values(plog)] == [b"0-0", b"1-0"]


async def test_appends_of_one_partition_in_one_flush_are_one_run(
    source_factory: SourceFactory, s3_store: ObjectStore, db: asyncpg.Pool
) -> None:
    plog = await _log(source_factory, s3_store, db, flush_ms=1000)
    await plog.append(batch(1, tag=b"w-"))  # a flush just left: the window runs from it
    answers = []
    for seq in range(3):  # each sent to the committer on its own, all within one flush's window
        answers.append(_submit(plog, seq))
        await asyncio.sleep(0.05)
    assert [i.base_offset for i in await asyncio.gather(*answers)] == [1, 2, 3]
    runs = await db.fetch("SELECT base_offset, last_offset FROM batch_runs ORDER BY base_offset")
    assert [(r["base_offset"], r["last_offset"]) for r in runs] == [(0, 0), (1, 3)]  # one write, fenced once
    assert [v for _, v in await values(plog)] == [b"w-0", b"0-0", b"1-0", b"2-0"]


async def _read_committed(plog: PgPartitionLog) -> list[bytes]:
    return [bytes(b) for b in (await plog.read(0, 1 << 20, IsolationLevel.READ_COMMITTED)).records]


async def test_a_commit_marker_holds_the_lso_until_it_is_committed(
    source_factory: SourceFactory, s3_store: ObjectStore, db: asyncpg.Pool
) -> None:
    held = _Held(s3_store)
    plog = await _log(source_factory, held, db, inline_max_bytes=-1)  # the marker's flush is PUT too
    data = _queued(plog.submit(batch(2, pid=9, epoch=0, seq=0, txn=True)))
    await held.held(1)
    held.waiting[0][1].set_result(True)
    await data
    commit = _queued(plog.submit(marker(9, commit=True), AppendOrigin.COORDINATOR))
    await held.held(2)  # the marker is sequenced (the producer state ended the transaction) ...
    in_flight = (plog.high_watermark, plog.last_stable_offset, await _read_committed(plog))
    held.waiting[1][1].set_result(False)  # ... but its flush fails: the coordinator writes it again
    with pytest.raises(KafkaError):
        await commit
    after_failure = (plog.last_stable_offset, await _read_committed(plog))
    again = _queued(plog.submit(marker(9, commit=True), AppendOrigin.COORDINATOR))
    await held.held(3)
    held.waiting[2][1].set_result(True)
    await again
    assert in_flight == (2, 0, [])  # (asserted once nothing is held: a failure must not hang the teardown)
    assert after_failure == (0, [])
    assert (plog.high_watermark, plog.last_stable_offset) == (3, 3)
    assert len(await _read_committed(plog)) == 2  # the data batch and the marker


def _queued(answer: LogAppendInfo | asyncio.Future[LogAppendInfo]) -> asyncio.Future[LogAppendInfo]:
    assert isinstance(answer, asyncio.Future)  # queued: answered once committed
    return answer
