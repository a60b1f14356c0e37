"""KIP-227 fetch sessions: the cache's rules (epochs, closing, eviction) as pure code, and the Fetch
handler answering a session's incremental fetches with only the partitions that changed."""

from __future__ import annotations

import random
import uuid
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


# -- v13+: topics by id (KIP-516) -------------------------------------------------------------------

T_ID, U_ID, GONE_ID = uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=3)


def by_id(session_id: int, epoch: int, parts: dict[tuple[uuid.UUID | None, int], int],
          forgotten: tuple[tuple[uuid.UUID | None, int], ...] = ()) -> Any:
    """A v13+ request's fields the cache reads: (topic id, partition) -> fetch offset."""
    def topics(keys: Any, partition: Any) -> list[Any]:
        ids = list(dict.fromkeys(i for i, _ in keys))
        return [NS(topic_id=i, partitions=[partition(k) for k in keys if k[0] == i]) for i in ids]
    return NS(session_id=session_id, session_epoch=epoch,
              topics=topics(list(parts), lambda k: NS(partition=k[1], fetch_offset=parts[k], partition_max_bytes=100,
                                                       current_leader_epoch=-1, log_start_offset=-1)),
              forgotten_topics_data=topics(list(forgotten), lambda k: k[1]))


def test_sessions_by_topic_id_resolve_names_and_forget_by_id() -> None:
    names = {T_ID: "t", U_ID: "u"}
    cache = FetchSessionCache(10, rng=random.Random(3))
    context = cache.new_context(by_id(0, 0, {(T_ID, 0): 0, (GONE_ID, 0): 0, (None, 1): 0}), 0, names.get)
    assert [(p.topic, p.topic_id, p.partition) for p in context.partitions] == \
        [("t", T_ID, 0), (None, GONE_ID, 0), (None, uuid.UUID(int=0), 1)]
    context.select([], 0)
    sid = context.session_id
    assert set(cache.sessions[sid].partitions) == {(T_ID, 0), (GONE_ID, 0), (uuid.UUID(int=0), 1)}
    names[GONE_ID] = "late"  # the id became known: the session's partition is named from now on
    context = cache.new_context(by_id(sid, 1, {(U_ID, 2): 4}, forgotten=((T_ID, 0), (None, 1))), 1, names.get)
    assert (context.error, [(p.topic, p.partition, p.fetch_offset) for p in context.partitions]) == \
        (E.none, [("late", 0, 0), ("u", 2, 4)])


def test_a_session_is_continued_only_at_the_kind_of_version_that_made_it() -> None:
    """Kafka's FetchManager: a session made at v12 (names) continued at v13+ (ids), or the
    reverse, is FETCH_SESSION_TOPIC_ID_ERROR, and the session stays for its own kind of fetch."""
    cache = FetchSessionCache(10, rng=random.Random(4))
    named = full(cache, {0: 0})
    context = cache.new_context(by_id(0, 0, {(T_ID, 0): 0}), 0, {T_ID: "t"}.get)
    context.select([], 0)
    with_ids = context.session_id
    assert cache.new_context(by_id(named, 1, {}), 1, {T_ID: "t"}.get).error is E.fetch_session_topic_id_error
    assert cache.new_context(request(with_ids, 1, {}), 1).error is E.fetch_session_topic_id_error
    assert cache.new_context(request(named, 1, {}), 1).error is E.none
    assert cache.new_context(by_id(with_ids, 1, {}), 1, {T_ID: "t"}.get).error is E.none


def test_responses_group_partitions_by_topic_id_not_by_a_missing_name() -> None:
    """Two unknown ids have no name: each is a topic entry of its own, named by its id."""
    cache = FetchSessionCache(0)
    context = cache.new_context(by_id(0, -1, {(GONE_ID, 0): 0, (U_ID, 0): 0, (U_ID, 1): 0}), 0, {}.get)
    topics = context.select([(p, {"records": b""}) for p in context.partitions], 0)
    assert [(t["topic"], t["topic_id"], len(t["partitions"])) for t in topics] == [(None, GONE_ID, 1), (None, U_ID, 2)]


def fetch_v(state: Any, version: int, topics: list[tuple[uuid.UUID | None, list[int]]], session_id: int = 0,
            epoch: int = -1, forgotten: list[tuple[uuid.UUID, list[int]]] | None = None, isolation: int = 0) -> Any:
    replica = {"replica_state": {"replica_id": -1, "replica_epoch": -1}} if version >= 15 else {"replica_id": -1}
    return call(state, ApiKey.FETCH, version, **replica, max_wait=0, min_bytes=1, max_bytes=1 << 20,
                isolation_level=isolation, session_id=session_id, session_epoch=epoch, rack_id="",
                forgotten_topics_data=[{"topic_id": i, "partitions": ps} for i, ps in forgotten or []],
                topics=[{"topic_id": i, "partitions": [
                    {"partition": p, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
                     "log_start_offset": -1, "partition_max_bytes": 1 << 20} for p in ps]} for i, ps in topics])


def errors(response: Any) -> list[tuple[uuid.UUID | None, int, ErrorCode]]:
    return [(t.topic_id, p.partition_index, p.error_code) for t in response.responses for p in t.partitions]


async def test_fetch_v13_to_v18_names_topics_by_id(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state(t=2)
    t_id = state.logs.topics["t"].topic_id
    await state.logs.get_log(TopicPartition("t", 1)).append(bytes(build_batch([Record(value=b"v")])))
    for version in range(13, 19):
        response = await fetch_v(state, version, [(t_id, [0, 1]), (GONE_ID, [0]), (None, [3])])
        assert errors(response) == [(t_id, 0, E.none), (t_id, 1, E.none), (GONE_ID, 0, E.unknown_topic_id),
                                    (None, 3, E.unknown_topic_id)], version
        assert [p.high_watermark for p in response.responses[0].partitions] == [0, 1]
        assert response.responses[0].partitions[1].records


async def test_a_session_of_a_recreated_topic_answers_inconsistent_topic_id(broker_state) -> None:  # type: ignore[no-untyped-def]
    """The session found the name t for the old id; once t is made again under another id, the
    old id's partitions are INCONSISTENT_TOPIC_ID (Kafka's readFromLocalLog), and a new full fetch
    with the old id gets UNKNOWN_TOPIC_ID."""
    state = await broker_state(t=1)
    old_id = state.logs.topics["t"].topic_id
    first = await fetch_v(state, 17, [(old_id, [0])], epoch=0)
    assert first.session_id != 0 and errors(first) == [(old_id, 0, E.none)]
    await state.logs.delete_topic("t")
    await state.logs.create_topic("t", 1)
    again = await fetch_v(state, 17, [], session_id=first.session_id, epoch=1)
    assert errors(again) == [(old_id, 0, E.inconsistent_topic_id)]
    assert errors(await fetch_v(state, 17, [(old_id, [0])])) == [(old_id, 0, E.unknown_topic_id)]
