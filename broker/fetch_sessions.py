"""Incremental fetch sessions (KIP-227; Kafka's FetchSession, FetchSessionCache and FetchManager).

A consumer that sends a Fetch with session epoch 0 gets a session id (when the cache has room): the
broker remembers its partitions and what it last told it of each (high watermark, log start
offset). Its next fetches (epoch 1, 2, ...) name only the partitions whose fetch position moved,
and forgotten_topics_data those it dropped; the broker reads every partition of the session and
answers only those with records, a changed high watermark or log start offset, or an error. A
consumer of a thousand idle partitions so sends and gets back almost nothing per fetch.

From v13 a fetch names topics by id (KIP-516): a session made at v13+ keys its partitions by
(topic id, partition) and one made before by (name, partition), and continuing a session at the
other kind of version is FETCH_SESSION_TOPIC_ID_ERROR (Kafka's FetchManager.newContext). A
partition whose id names no topic stays in the session without a name (answered UNKNOWN_TOPIC_ID)
and is named once the id is known; a name, once found, is kept, so a topic deleted and made again
under a new id is told apart by the fetch (INCONSISTENT_TOPIC_ID), as in Kafka.

Pure bookkeeping, owned by the event loop: every step below runs without an await in the middle.
The handler (broker/handlers/fetch.py) builds a context per request (new_context), reads the
partitions it lists, then keeps what the context selects (select) for the response.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final

from protocol.errors import ErrorCode
from protocol.fast_responses import FetchPartitionResponse, FetchTopicResponse
from protocol.fetch_request import FetchPartition, FetchRequest, FetchTopic

__all__ = ("CachedPartition", "FetchContext", "FetchSessionCache", "TopicNames")

log = logging.getLogger(__name__)

INVALID_SESSION_ID: Final = 0
INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1
EVICTION_MS: Final = 120_000  # Kafka's min.incremental.fetch.session.eviction.ms (internal)
ZERO_UUID: Final = uuid.UUID(int=0)

# A v13+ fetch's topic ids to names (None: no such topic); None for a fetch that names its topics.
TopicNames = Callable[[uuid.UUID], str | None] | None


@dataclass(slots=True)
class CachedPartition:
    """A partition of a fetch: the request's fields (names as the request schema's), and for a
    session what the last response said of it. topic_id is set from v13 (the zero UUID for a
    request's zero id); topic is None while that id names no topic."""

    topic: str | None
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    high_watermark_sent: int = -1
    log_start_sent: int = -1
    topic_id: uuid.UUID | None = None

    @property
    def key(self) -> tuple[str | uuid.UUID | None, int]:
        """Kafka's CachedPartition equality: by topic id in a session using ids, else by name."""
        return (self.topic if self.topic_id is None else self.topic_id, self.partition)

    def must_respond(self, response: FetchPartitionResponse) -> bool:
        """Kafka's CachedPartition.maybeUpdateResponseData: records, a changed high watermark or
        log start offset, or an error; remembers what is sent (an error forgets the watermark so
        the partition is sent again once it clears)."""
        respond = bool(response["records"])
        if response["high_watermark"] != self.high_watermark_sent:
            respond, self.high_watermark_sent = True, response["high_watermark"]
        if response["log_start_offset"] != self.log_start_sent:
            respond, self.log_start_sent = True, response["log_start_offset"]
        if response["error_code"] is not ErrorCode.none:
            respond, self.high_watermark_sent = True, -1
        return respond


def _from_request(topic: str | None, p: FetchPartition, topic_id: uuid.UUID | None = None) -> CachedPartition:
    return CachedPartition(topic, p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch,
                           p.log_start_offset, topic_id=topic_id)


def _topic(names: TopicNames, topic: FetchTopic) -> tuple[uuid.UUID | None, str | None]:
    """A request topic's (id, name): (None, its name) before v13; from v13 its id (the zero UUID
    reads as None, protocol/fetch_request.py) and the name that id has here, if any."""
    if names is None:
        return None, topic.topic
    topic_id = topic.topic_id
    return (ZERO_UUID, None) if topic_id is None else (topic_id, names(topic_id))


@dataclass(slots=True)
class FetchSession:
    session_id: int
    epoch: int  # the epoch the next request must carry
    partitions: dict[tuple[str | uuid.UUID | None, int], CachedPartition]
    last_used_ms: int
    created_ms: int
    uses_topic_ids: bool = False

    def update(self, request: FetchRequest, names: TopicNames) -> None:
        """Add or update the request's partitions, drop its forgotten ones; name the partitions
        whose topic id named no topic so far (Kafka's maybeResolveUnknownName)."""
        for topic in request.topics:
            topic_id, name = _topic(names, topic)
            ident = name if topic_id is None else topic_id
            for p in topic.partitions:
                cached = self.partitions.get((ident, p.partition))
                if cached is None:
                    self.partitions[ident, p.partition] = _from_request(name, p, topic_id)
                else:
                    cached.fetch_offset, cached.partition_max_bytes = p.fetch_offset, p.partition_max_bytes
                    cached.current_leader_epoch, cached.log_start_offset = p.current_leader_epoch, p.log_start_offset
        for forgotten in request.forgotten_topics_data:
            ident = forgotten.topic if names is None else forgotten.topic_id or ZERO_UUID
            for index in forgotten.partitions:
                self.partitions.pop((ident, index), None)
        if names is not None:
            for cached in self.partitions.values():
                if cached.topic is None and cached.topic_id is not None and cached.topic_id != ZERO_UUID:
                    cached.topic = names(cached.topic_id)


@dataclass(slots=True)
class FetchContext:
    """What one Fetch reads and how its response is cut: partitions in read order; session_id
    for the response; error (a refused session: answered with no partitions)."""

    partitions: list[CachedPartition]
    session_id: int = INVALID_SESSION_ID
    error: ErrorCode = ErrorCode.none
    incremental: bool = False
    session: FetchSession | None = None
    _creating: FetchSessionCache | None = field(default=None, repr=False)
    _uses_topic_ids: bool = False

    def select(self, responses: list[tuple[CachedPartition, FetchPartitionResponse]], now_ms: int,
               ) -> list[FetchTopicResponse]:
        """The response's topics: all partitions for a full fetch (creating the session, if one is
        to be made, with what is sent), only those with something to say for an incremental one
        (moved to the end of the session when they carry records, for fairness, as Kafka)."""
        if self._creating is not None:
            self.session_id = self._creating.create(self.partitions, now_ms, self._uses_topic_ids)
            for cached, response in responses:
                cached.must_respond(response)
            return _by_topic(responses)
        if not self.incremental or self.session is None:
            return _by_topic(responses)
        kept = []
        for cached, response in responses:
            if cached.must_respond(response):
                kept.append((cached, response))
                if response["records"]:
                    key = cached.key
                    self.session.partitions[key] = self.session.partitions.pop(key)
        return _by_topic(kept)


def _by_topic(responses: Iterable[tuple[CachedPartition, FetchPartitionResponse]]) -> list[FetchTopicResponse]:
    """Consecutive partitions of one topic under one topic entry (as Kafka's FetchResponse); from
    v13 one topic is one id (two unknown ids have no name to tell them apart)."""
    out: list[FetchTopicResponse] = []
    last: object = out  # matches no topic
    for cached, response in responses:
        ident = cached.topic if cached.topic_id is None else cached.topic_id
        if ident != last:
            out.append({"topic": cached.topic, "topic_id": cached.topic_id, "partitions": []})
            last = ident
        out[-1]["partitions"].append(response)
    return out


def _request_partitions(request: FetchRequest, names: TopicNames) -> list[CachedPartition]:
    if names is None:
        return [_from_request(t.topic, p) for t in request.topics for p in t.partitions]
    out = []
    for t in request.topics:
        topic_id, name = _topic(names, t)
        out += [_from_request(name, p, topic_id) for p in t.partitions]
    return out


class FetchSessionCache:
    """max.incremental.fetch.session.cache.slots sessions at most. A new session may take the slot
    of one unused for EVICTION_MS, else of the smallest one if it is no larger (Kafka's
    FetchSessionCache.tryEvict for non-follower sessions)."""

    def __init__(self, max_slots: int, eviction_ms: int = EVICTION_MS, rng: random.Random | None = None) -> None:
        self.max_slots = max_slots
        self.eviction_ms = eviction_ms
        self.sessions: dict[int, FetchSession] = {}
        self._rng = rng or random.Random()

    def new_context(self, request: FetchRequest, now_ms: int, names: TopicNames = None) -> FetchContext:
        """The context of one fetch; names resolves topic ids for a v13+ fetch (None before)."""
        session_id, epoch = request.session_id, request.session_epoch
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.sessions.pop(session_id, None)  # a full fetch closes the session it names
            context = FetchContext(_request_partitions(request, names), _uses_topic_ids=names is not None)
            if epoch == INITIAL_EPOCH and self.max_slots > 0:
                context._creating = self
            return context
        session = self.sessions.get(session_id)
        if session is None:
            return FetchContext([], error=ErrorCode.fetch_session_id_not_found)
        if session.epoch != epoch:
            return FetchContext([], error=ErrorCode.invalid_fetch_session_epoch)
        if session.uses_topic_ids != (names is not None):
            # Made at v12 and continued at v13 (or the reverse): its keys cannot match the request's.
            return FetchContext([], error=ErrorCode.fetch_session_topic_id_error)
        session.update(request, names)
        if not session.partitions:
            del self.sessions[session_id]
            return FetchContext([])
        session.last_used_ms = now_ms
        session.epoch = _next_epoch(session.epoch)
        return FetchContext(list(session.partitions.values()), session_id, incremental=True, session=session)

    def create(self, partitions: list[CachedPartition], now_ms: int, uses_topic_ids: bool = False) -> int:
        """A session for a full fetch's partitions if there is room; its id, or 0 (none)."""
        if len(self.sessions) >= self.max_slots and not self._evict(len(partitions), now_ms):
            return INVALID_SESSION_ID
        session_id = self._new_id()
        self.sessions[session_id] = FetchSession(session_id, _next_epoch(INITIAL_EPOCH),
                                                 {p.key: p for p in partitions}, now_ms, now_ms, uses_topic_ids)
        log.debug("fetch session %d opened with %d partitions (%d sessions)", session_id, len(partitions),
                  len(self.sessions))
        return session_id

    def _evict(self, size: int, now_ms: int) -> bool:
        if not self.sessions:
            return False
        stalest = min(self.sessions.values(), key=lambda s: s.last_used_ms)
        if now_ms - stalest.last_used_ms > self.eviction_ms:
            del self.sessions[stalest.session_id]
            return True
        smallest = min(self.sessions.values(), key=lambda s: (len(s.partitions), s.session_id))
        if size < len(smallest.partitions):
            return False
        del self.sessions[smallest.session_id]
        return True

    def _new_id(self) -> int:
        while True:
            session_id = self._rng.randint(1, (1 << 31) - 1)
            if session_id not in self.sessions:
                return session_id

    def __iter__(self) -> Iterator[FetchSession]:
        return iter(self.sessions.values())


def _next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch: 1, 2, ... wrapping past the int32 maximum to 1."""
    return 1 if epoch >= (1 << 31) - 1 or epoch < 0 else epoch + 1
