"""What a handler module exports, and what a handler receives.

Typing: each handler takes its own API's request type (protocol/request_types); the Handler that
holds any of them leaves the request dynamically typed.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from protocol.api_keys import ApiKey
from protocol.build import MissingFieldError, MissingFields, build
from protocol.codec import RequestHeader, response_schema
from protocol.errors import ErrorCode, KafkaError
from storage.api import ClusterView, IsolationLevel, TopicPartition

from .principal import Session

if TYPE_CHECKING:
    from _typeshed import DataclassInstance
    from kio.static.protocol import ResponsePayload

    from .security.sasl import SaslAuthenticator
    from .state import BrokerState

__all__ = ("CloseConnection", "Handler", "Later", "RequestContext", "NO_RESPONSE", "check_leader", "isolation_level")

log = logging.getLogger(__name__)

# Set (to 1) by the test suite, for the brokers it starts too: a success answer missing a field
# (protocol/build.py's rule) fails the request, and the broker's logged traceback the test.
STRICT_RESPONSES_ENV: Final = "EOSBROKER_STRICT_RESPONSES"
_warned: set[tuple[type[DataclassInstance], frozenset[str]]] = set()


def _refuse_missing(cls: type[DataclassInstance], absent: frozenset[str]) -> None:
    raise MissingFieldError(f"{cls.__name__} v{getattr(cls, '__version__', '?')} built without "
                            f"{', '.join(sorted(absent))}, which Kafka's JSON gives no default")


def _fill_missing(cls: type[DataclassInstance], absent: frozenset[str]) -> None:
    """In production the answer goes out with those fields at their defaults, as Kafka's generated
    classes would send them: refusing it would fail a request the client may well get on with."""
    if (cls, absent) not in _warned:
        _warned.add((cls, absent))
        log.warning("%s v%s answered without %s (left at the default; a broker bug worth reporting)",
                    cls.__name__, getattr(cls, "__version__", "?"), ", ".join(sorted(absent)))


_MISSING: Final[MissingFields] = _refuse_missing if os.environ.get(STRICT_RESPONSES_ENV) else _fill_missing


# A handler returns this when the protocol wants no answer (Produce with acks=0).
NO_RESPONSE: Final = object()

# A handler returns a Later when it has done the part of its request that must run in request
# order and its answer waits for something else (a Produce sequenced in its partitions, waiting
# for its commit): the encoded answer, None for no answer, or CloseConnection. The connection
# goes on to its next request meanwhile and writes the answers in request order
# (broker/connection/answers.py).
Later = asyncio.Future["bytes | None"]


class CloseConnection(KafkaError):
    """The request failed and has no response to say so (acks=0 Produce): as Kafka does, the
    connection closes, so the client refreshes its metadata and notices."""


# Not frozen: a frozen dataclass's __init__ sets each field through object.__setattr__ (~2.2 us
# against ~0.7 us), and every request builds one. Only throttle_ms is assigned, by a handler.
@dataclass(slots=True, kw_only=True)
class RequestContext:
    header: RequestHeader
    broker: BrokerState
    peer: str
    # Who asks (principal, listener, client host): broker/principal.py, settled per connection.
    session: Session
    # The connection's SASL state on a SASL listener (broker/security/sasl.py), for SaslHandshake
    # and SaslAuthenticate; None elsewhere.
    sasl: SaslAuthenticator | None = None
    # Set by a handler whose client is over its quota (broker/quotas): the connection reads
    # nothing more for this long once the response has gone (KIP-219), as Kafka mutes the channel.
    throttle_ms: int = 0

    @property
    def version(self) -> int:
        return self.header.api_version

    def respond(self, data: Mapping[str, object]) -> ResponsePayload:
        """The response entity of this request's API and version, built from plain values; a key
        no version of the response has raises protocol.build.UnknownFieldError (a misspelt field),
        and a success that misses a field is refused under the tests, logged otherwise (_MISSING)."""
        return build(response_schema(self.header.api_key, self.header.api_version), data, _MISSING)


@dataclass(frozen=True, slots=True, kw_only=True)
class Handler:
    api_key: ApiKey
    min_version: int
    max_version: int
    handle: Callable[[RequestContext, Any], Awaitable[Any]]
    # Versions advertised but refused (Produce v0-2: advertised so that old librdkafka enables
    # compression, rejected because they carry message formats 0 and 1).
    parse_min_version: int | None = None
    # The whole request answered with one error, for a request kio does not read (Produce and
    # Fetch: protocol/produce_request.py, fetch_request.py); None: broker/error_response.py
    # mirrors the kio entity.
    answer_error: Callable[[RequestContext, Any, ErrorCode, str | None], bytes] | None = None

    def parses(self, version: int) -> bool:
        low = self.min_version if self.parse_min_version is None else self.parse_min_version
        return low <= version <= self.max_version


def isolation_level(value: int) -> IsolationLevel:
    """Fetch's and ListOffsets' isolation level; Kafka's IsolationLevel.forId refuses others."""
    try:
        return IsolationLevel(value)
    except ValueError:
        raise KafkaError(ErrorCode.invalid_request, f"unknown isolation level {value}") from None


def check_leader(cluster: ClusterView, tp: TopicPartition, current_leader_epoch: int = -1) -> int:
    """Kafka's Partition.localLogWithEpochOrThrow for a leader-only request: the client's
    current_leader_epoch (KIP-320; -1 skips the check) older than the partition's is
    FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH (this broker has not seen that election yet);
    then a partition another broker leads, or none does, is NOT_LEADER_OR_FOLLOWER. Returns the
    leader epoch; -1 for a partition the cluster does not have (get_log says so)."""
    leader = cluster.leader(tp)
    if leader is None:
        return -1
    epoch = leader.leader_epoch
    if current_leader_epoch != -1 and current_leader_epoch < epoch:
        raise KafkaError(ErrorCode.fenced_leader_epoch,
                         f"leader epoch {current_leader_epoch} of {tp} is older than the current {epoch}")
    if current_leader_epoch > epoch:
        raise KafkaError(ErrorCode.unknown_leader_epoch,
                         f"leader epoch {current_leader_epoch} of {tp} is newer than the {epoch} known here")
    if leader.leader != cluster.node_id:
        message = (f"{tp} is led by broker {leader.leader}, not broker {cluster.node_id}" if leader.leader >= 0
                   else f"{tp} has no leader at the moment")
        raise KafkaError(ErrorCode.not_leader_or_follower, message)
    return epoch
