"""What a handler module exports, and what a handler receives."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import RequestHeader, response_schema
from protocol.errors import ErrorCode, KafkaError
from storage.api import IsolationLevel

if TYPE_CHECKING:
    from .state import BrokerState

__all__ = ("CloseConnection", "Handler", "RequestContext", "NO_RESPONSE", "isolation_level")

# A handler returns this when the protocol wants no answer (Produce with acks=0).
NO_RESPONSE: Any = object()


class CloseConnection(KafkaError):
    """The request failed and has no response to say so (acks=0 Produce): as Kafka does, the
    connection closes, so the client refreshes its metadata and notices."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestContext:
    header: RequestHeader
    broker: BrokerState
    peer: str

    @property
    def version(self) -> int:
        return self.header.api_version

    def respond(self, data: Mapping[str, Any]) -> Any:
        """The response entity of this request's API and version, built from plain values."""
        return build(response_schema(self.header.api_key, self.header.api_version), data)


@dataclass(frozen=True, slots=True, kw_only=True)
class Handler:
    api_key: ApiKey
    min_version: int
    max_version: int
    handle: Callable[[RequestContext, Any], Awaitable[Any]]
    # Versions advertised but refused (Produce v0-2: advertised so that old librdkafka enables
    # compression, rejected because they carry message formats 0 and 1).
    parse_min_version: int | None = None

    def parses(self, version: int) -> bool:
        low = self.min_version if self.parse_min_version is None else self.parse_min_version
        return low <= version <= self.max_version


def isolation_level(value: int) -> IsolationLevel:
    """Fetch's and ListOffsets' isolation level; Kafka's IsolationLevel.forId refuses others."""
    try:
        return IsolationLevel(value)
    except ValueError:
        raise KafkaError(ErrorCode.invalid_request, f"unknown isolation level {value}") from None
