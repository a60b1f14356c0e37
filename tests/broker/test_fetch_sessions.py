"""KIP-227 fetch sessions: the cache's rules (epochs, closing, eviction) as pure code, and the Fetch
handler answering a session's incremental fetches with only the partitions that changed."""

from __future__ import annotations

import random
from types import SimpleNamespace as NS
from typing import Any

from broker.fetch_sessions import FetchSessionCache
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from storage.api import TopicPartition
from tests.broker.test_admin_handlers import call

E = ErrorCode


def request(session_id: int, epoch: int, parts: dict[int, int], forgotten: tuple[int, ...] = (),
            topic: str = "t") -> Any:
    """A Fetch request's fields the cache reads: partition -> fetch offset."""
    return NS(session_id=session_id, session_epoch=epoch,
              topics=[NS(topic=topic, partitions=[NS(partition=p, fetch_offset=o, partition_max_bytes=100,
                                                     current_leader_epoch=-1, log_start_offset=-1)
                                                  for p, o in parts.items()])] if parts else [],
              forgotten_topics_data=[NS(topic=topic, partitions=list(forgotten))] if forgotten else [])


def full(cache: FetchSessionCache, parts: dict[int, int], now: int = 0) -> int:
    context = cache.new_context(request(0, 0, parts), now)
    context.select([], now)
    return context.session_id


def test_epochs_close_and_forget() -> None:
    cache = FetchSessionCache(10, rng=random.Random(1))
    sid = full(cache, {0: 0, 1: 0})
    assert sid != 0 and cache.sessions[sid].epoch == 1
    assert cache.new_context(request(sid, 2, {}), 1).error is E.invalid_fetch_session_epoch
    assert cache.new_context(request(sid + 1, 1, {}), 1).error is E.fetch_session_id_not_found
    context = cache.new_context(request(sid, 1, {1: 5}, forgotten=(0,)), 1)
    assert (context.error, context.incremental, [(p.partition, p.fetch_offset) for p in context.partitions]) == \
        (E.none, True, [(1, 5)])
    assert cache.sessions[sid].epoch == 2
    assert cache.new_context(request(sid, 2, {}, forgotten=(1,)), 2).partitions == []  # emptied: closed
    assert sid not in cache.sessions
    sid = full(cache, {0: 0})
    assert cache.new_context(request(sid, -1, {0: 0}), 3).session_id == 0 and sid not in cache.sessions


def test_a_full_cache_evicts_a_stale_or_smaller_session_only() -> None:
    cache = FetchSessionCache(2, eviction_ms=1000, rng=random.Random(2))
    small, big = full(cache, {0: 0}, now=0), full(cache, {0: 0, 1: 0, 2: 0}, now=500)
    assert full(cache, {0: 0}, now=600) != 0 and small not in cache.sessions  # as large as the smallest
    assert full(cache, {}, now=700) == 0  # smaller than every session, none stale: no session
    assert full(cache, {}, now=1600) != 0 and big not in cache.sessions  # big is stale (unused 1.1 s)
    assert FetchSessionCache(0).new_context(request(0, 0, {0: 0}), 0)._creating is None


def fetch(state: Any, session_id: int, epoch: int, parts: dict[int, int], forgotten: tuple[int, ...] = ()) -> Any:
    return call(state, ApiKey.FETCH, 12, replica_id=-1, max_wait=0, min_bytes=1, max_bytes=1 << 20,
                isolation_level=0, session_id=session_id, session_epoch=epoch, rack_id="",
                forgotten_topics_data=[{"topic": "t", "partitions": list(forgotten)}] if forgotten else [],
                topics=[{"topic": "t", "partitions": [
                    {"partition": p, "current_leader_epoch": -1, "fetch_offset": o, "last_fetched_epoch": -1,
                     "log_start_offset": -1, "partition_max_bytes": 1 << 20} for p, o in parts.items()]}]
                if parts else [])


def returned(response: Any) -> dict[int, int]:
    return {p.partition_index: p.high_watermark for t in response.responses for p in t.partitions}


async def test_incremental_fetches_return_only_what_changed(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state(t=3)
    first = await fetch(state, 0, 0, {0: 0, 1: 0, 2: 0})
    sid = first.session_id
    assert sid != 0 and returned(first) == {0: 0, 1: 0, 2: 0}
    assert returned(await fetch(state, sid, 1, {})) == {}  # nothing moved: nothing sent
    await state.logs.get_log(TopicPartition("t", 2)).append(bytes(build_batch([Record(value=b"v")])))
    changed = await fetch(state, sid, 2, {})  # partition 2 was not named, and is read and sent
    assert returned(changed) == {2: 1} and changed.responses[0].partitions[0].records
    assert returned(await fetch(state, sid, 3, {2: 1})) == {}  # caught up: the watermark was sent
    out_of_range = await fetch(state, sid, 4, {0: 5})  # an error is always sent
    assert [(p.partition_index, p.error_code) for p in out_of_range.responses[0].partitions] == \
        [(0, E.offset_out_of_range)]
    cleared = await fetch(state, sid, 5, {0: 0}, forgotten=(1,))
    assert returned(cleared) == {0: 0}  # the error cleared: sent again
    again = await fetch(state, sid, 5, {})
    assert (again.error_code, again.session_id, returned(again)) == (E.invalid_fetch_session_epoch, 0, {})
    assert state.fetch_sessions is not None and set(state.fetch_sessions.sessions[sid].partitions) == \
        {("t", 0), ("t", 2)}
