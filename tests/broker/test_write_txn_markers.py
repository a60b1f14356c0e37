"""WriteTxnMarkers in process: a transactional batch holds the LSO back until an ABORT marker
written through the handler releases it; the leader's marker checks answer Kafka's errors."""

from __future__ import annotations

import pytest

from broker.dispatch import HANDLERS
from broker.handler import RequestContext
from broker.principal import LOCAL_ANONYMOUS
from broker.services import transaction_coordinator
from coordinator.transaction.outcomes import AbortCause
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import RequestHeader, encode_response, request_schema
from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from storage.api import IsolationLevel, TopicPartition

TP = TopicPartition("t", 0)


async def write_markers(state, *, pid, epoch, coordinator_epoch=0, commit=False, version=2,
                        partitions=(("t", 0),)):  # type: ignore[no-untyped-def]
    topics: dict[str, list[int]] = {}
    for name, p in partitions:
        topics.setdefault(name, []).append(p)
    request = build(request_schema(ApiKey.WRITE_TXN_MARKERS, version), {"markers": [{
        "producer_id": pid, "producer_epoch": epoch, "transaction_result": commit,
        "coordinator_epoch": coordinator_epoch,
        "topics": [{"name": n, "partition_indexes": ps} for n, ps in topics.items()]}]})
    header = RequestHeader(api_key=ApiKey.WRITE_TXN_MARKERS, api_version=version, correlation_id=3,
                           client_id="test")
    response = await HANDLERS[ApiKey.WRITE_TXN_MARKERS].handle(
        RequestContext(header=header, broker=state, peer="test", session=LOCAL_ANONYMOUS), request)
    assert encode_response(3, response)
    [marker] = response.markers
    assert marker.producer_id == pid
    return {(t.name, p.partition_index): p.error_code for t in marker.topics for p in t.partitions}


async def open_txn(state, pid=4242, epoch=3):  # type: ignore[no-untyped-def]
    plog = state.logs.get_log(TP)
    await plog.append(bytes(build_batch([Record(key=None, value=b"v", timestamp=1000)] * 2, producer_id=pid,
                                        producer_epoch=epoch, base_sequence=0, transactional=True)))
    return plog


@pytest.mark.parametrize("version", [1, 2])
async def test_abort_marker_releases_the_lso(broker_state, version) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state(t=1)
    plog = await open_txn(state)
    [txn] = plog.open_transactions()
    assert (txn.producer_id, txn.producer_epoch, txn.first_offset) == (4242, 3, 0)
    assert plog.last_stable_offset == 0 and plog.high_watermark == 2
    assert state.logs.open_transactions() == {TP: [txn]}
    assert await write_markers(state, pid=4242, epoch=3, version=version) == {("t", 0): ErrorCode.none}
    assert plog.last_stable_offset == plog.high_watermark == 3
    assert plog.open_transactions() == [] and state.logs.open_transactions() == {}
    [aborted] = (await plog.read(0, 1 << 20, isolation=IsolationLevel.READ_COMMITTED)).aborted_transactions or []
    assert (aborted.producer_id, aborted.first_offset) == (4242, 0)


async def test_stale_producer_epoch_is_refused(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state(t=1)
    plog = await open_txn(state, epoch=3)
    assert await write_markers(state, pid=4242, epoch=2) == {("t", 0): ErrorCode.invalid_producer_epoch}
    assert plog.last_stable_offset == 0 and plog.high_watermark == 2  # nothing written


async def test_older_coordinator_epoch_is_fenced(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state(t=1)
    await open_txn(state)
    assert await write_markers(state, pid=4242, epoch=3, coordinator_epoch=5, commit=True) == {
        ("t", 0): ErrorCode.none}
    plog = await open_txn(state)  # a second transaction of the same producer
    assert await write_markers(state, pid=4242, epoch=3, coordinator_epoch=4) == {
        ("t", 0): ErrorCode.transaction_coordinator_fenced}
    assert plog.last_stable_offset == 3


async def test_marker_without_open_transaction_is_written_and_changes_nothing(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state(t=2)
    codes = await write_markers(state, pid=99, epoch=0, partitions=(("t", 0), ("t", 1), ("nope", 0)))
    assert codes == {("t", 0): ErrorCode.none, ("t", 1): ErrorCode.none,
                     ("nope", 0): ErrorCode.unknown_topic_or_partition}
    plog = state.logs.get_log(TP)
    assert plog.high_watermark == plog.last_stable_offset == 1  # the marker takes an offset, as on Kafka


async def test_an_abort_that_ends_a_transaction_counts_as_admin(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state(t=1)
    outcomes = transaction_coordinator(state).outcomes  # its counters, without starting it
    await write_markers(state, pid=99, epoch=0)  # no transaction open: changes nothing, not counted
    await open_txn(state)
    await write_markers(state, pid=4242, epoch=2)  # refused (stale epoch): not counted
    assert outcomes.aborted[AbortCause.ADMIN] == 0
    await write_markers(state, pid=4242, epoch=3)
    await open_txn(state)
    await write_markers(state, pid=4242, epoch=3, commit=True)
    assert outcomes.aborted[AbortCause.ADMIN] == 1
    assert outcomes.committed == 0
