"""Request and response codecs: the only user of kio's serializers.

Each (api_key, version) pair resolves once to a cached reader or writer; the request header version
(v1, or v2 for flexible requests) and response header version come from kio's schema classes, so
ApiVersions keeps its v0 response header as Kafka requires; versions kio lacks come from
newer_schemas.py. Produce requests, the largest, and
Fetch requests, the most frequent, are read by hand instead (produce_request.py, fetch_request.py).

Typing: a schema class is kio's (or protocol/newer_schemas's) for the API key and version a frame
names, found in a table at run time: typed as kio's RequestPayload / ResponsePayload protocols, a
decoded request as `object` (handlers get their versions' unions from protocol/request_types), and
a decoded response as untyped, for the caller who sent its request to read.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from .api_keys import ApiKey
from .bounds import UnknownTaggedField, request_walker
from .errors import ErrorCode, KafkaError
from .fetch_request import VERSIONS as FETCH_VERSIONS
from .fetch_request import read_fetch_request
from .newer_schemas import NEWER_REQUESTS, NEWER_RESPONSES
from .produce_request import VERSIONS as PRODUCE_VERSIONS
from .produce_request import read_produce_request
from .readable import NullFieldError
from .unknown_tags import strip_unknown_tags

if TYPE_CHECKING:
    from kio.serial.readers import Reader
    from kio.serial.writers import Writer
    from kio.static.protocol import Entity, Payload, RequestPayload, ResponsePayload
    from kio.static.protocol import RequestHeader as KioRequestHeader

E = TypeVar("E", bound="Entity")

__all__ = (
    "RefusedRequest",
    "RequestHeader",
    "UnsupportedRequest",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "peek_header",
    "request_schema",
    "response_schema",
)

_PEEK: Final = struct.Struct(">hhi")
_PRODUCE: Final = int(ApiKey.PRODUCE)
_FETCH: Final = int(ApiKey.FETCH)
_new_tuple = tuple.__new__  # a NamedTuple's own __new__ is a Python call with keywords


class RequestHeader(NamedTuple):
    """A frozen dataclass cost ~1.9 us to build; every request builds one (tuple.__new__: ~0.2 us)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


class UnsupportedRequest(KafkaError):
    """The frame names an API key or version this broker does not parse."""

    def __init__(self, header: RequestHeader, message: str) -> None:
        super().__init__(ErrorCode.unsupported_version, message)
        self.header = header


class RefusedRequest(KafkaError):
    """The frame parses, but Kafka's parser refuses it: a null where the schema forbids one. The
    connection closes, logged with the header as broker/dispatch.py's check logs it."""

    def __init__(self, header: RequestHeader, message: str | None) -> None:
        super().__init__(ErrorCode.invalid_request, message)
        self.header = header


def peek_header(frame: bytes | memoryview) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id): the fields every header version starts with."""
    if len(frame) < _PEEK.size:
        raise KafkaError(ErrorCode.invalid_request, f"frame of {len(frame)} bytes has no header")
    return _PEEK.unpack_from(frame, 0)


@cache
def request_schema(api_key: int, version: int) -> type[RequestPayload]:
    return NEWER_REQUESTS.get((api_key, version)) or load_request_schema(api_key, version)


@cache
def response_schema(api_key: int, version: int) -> type[ResponsePayload]:
    return NEWER_RESPONSES.get((api_key, version)) or load_response_schema(api_key, version)


@cache
def _request_readers(api_key: int, version: int) -> tuple[Callable[[bytes | memoryview], None],
                                                          Reader[KioRequestHeader], Reader[RequestPayload]]:
    schema = request_schema(api_key, version)
    header_type = schema.__header_schema__
    # mypy: a class is Hashable, but mypy rejects a union of classes as an @cache argument
    return request_walker(header_type, schema), entity_reader(header_type), entity_reader(schema)  # type: ignore[arg-type]


@cache
def _writer(entity_type: type[E]) -> Writer[E]:
    return entity_writer(entity_type)


@cache
def _reader(entity_type: type[E]) -> Reader[E]:
    return entity_reader(entity_type)


def decode_request(frame: bytes | memoryview, supported: Callable[[int, int], bool]) -> tuple[RequestHeader, object]:
    """Parse a request frame. `supported(api_key, version) -> bool` gates what may be parsed.

    Raises UnsupportedRequest (with the header) for keys/versions we do not serve,
    KafkaError(INVALID_REQUEST) for bodies that do not parse or whose lengths and counts reach
    past the end of the frame, and RefusedRequest (with the header) for a Produce or Fetch request
    with a null where the schema forbids one (other requests' nulls are dispatch's to find).
    """
    api_key, version, correlation_id = peek_header(frame)
    if not supported(api_key, version):
        header = RequestHeader(
            api_key=api_key, api_version=version, correlation_id=correlation_id, client_id=None
        )
        raise UnsupportedRequest(header, f"api key {api_key} version {version} is not supported")
    if api_key == _FETCH and version in FETCH_VERSIONS:
        return _read_by_hand(read_fetch_request, frame, _FETCH, version, correlation_id)
    if api_key == _PRODUCE and version in PRODUCE_VERSIONS:
        return _read_by_hand(read_produce_request, frame, _PRODUCE, version, correlation_id)
    check_bounds, read_header, read_body = _request_readers(api_key, version)
    # Before kio reads anything: its array readers allocate what a count claims (see bounds.py).
    try:
        check_bounds(frame)
    except UnknownTaggedField:
        frame = strip_unknown_tags(frame, check_bounds)
    try:
        kio_header, offset = read_header(frame, 0)
        body, end = read_body(frame, offset)
    except Exception as exc:  # kio raises assorted errors on malformed input
        raise KafkaError(
            ErrorCode.invalid_request,
            f"malformed api key {api_key} v{version} request: {exc}",
        ) from exc
    return _new_tuple(RequestHeader, (api_key, version, correlation_id, kio_header.client_id)), body


def _read_by_hand(read: Callable[[bytes | memoryview, int], tuple[str | None, object]], frame: bytes | memoryview,
                  api_key: int, version: int, correlation_id: int) -> tuple[RequestHeader, object]:
    """Produce and Fetch skip the bounds walk, kio and dispatch's null check: their readers do all three."""
    try:
        client_id, body = read(frame, version)
    except NullFieldError as exc:
        header = _new_tuple(RequestHeader, (api_key, version, correlation_id, None))
        raise RefusedRequest(header, exc.message) from None
    return _new_tuple(RequestHeader, (api_key, version, correlation_id, client_id)), body


def encode_response(correlation_id: int, entity: ResponsePayload) -> bytes:
    """Size prefix + response header (version chosen by the schema) + body."""
    header_type: Callable[..., Entity] = entity.__header_schema__  # kio's fields are NewTypes of int
    return _framed(header_type(correlation_id=correlation_id), entity)


def _framed(header: Entity, entity: Payload) -> bytes:
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    for part in (header, entity):
        _writer(part.__class__)(buf, part)
    out = buf.getbuffer()
    struct.pack_into(">i", out, 0, len(out) - 4)
    del out
    return buf.getvalue()


# The client side, for broker/embedded.py's few admin requests (it is a test helper, not a client
# library: one request at a time, no retries).


def encode_request(entity: RequestPayload, correlation_id: int, client_id: str | None) -> bytes:
    """Size prefix + request header (v1 or v2, as the schema says) + body."""
    header_type: Callable[..., Entity] = entity.__header_schema__  # kio's fields are NewTypes of int
    header = header_type(request_api_key=entity.__api_key__, request_api_version=entity.__version__,
                         correlation_id=correlation_id, client_id=client_id)
    return _framed(header, entity)


def decode_response(payload: bytes, api_key: int, version: int) -> tuple[int, Any]:
    """(correlation id, body) of a response frame without its size prefix."""
    schema = response_schema(api_key, version)
    try:
        # mypy: a class is Hashable, but mypy rejects a union of classes as an @cache argument
        header, offset = _reader(schema.__header_schema__)(payload, 0)  # type: ignore[arg-type]
        body, _ = _reader(schema)(payload, offset)
    except Exception as exc:  # kio raises assorted errors on malformed input
        raise KafkaError(ErrorCode.corrupt_message, f"malformed api key {api_key} v{version} response: {exc}") from exc
    return header.correlation_id, body
