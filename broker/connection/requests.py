"""Dispatch on one connection: a frame's header decoded, its handler from the API table
(broker/dispatch.py) called, and the answers written in request order.

Requests on one connection are handled in sequence; a Produce may answer later (once durable),
and the connection then goes on to its next request (broker/connection/answers.py keeps the
answers in correlation-id order). ResponseWriter only gathers small answers into fewer writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sized
from time import perf_counter

from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0

from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import RefusedRequest, RequestHeader, UnsupportedRequest, decode_request, encode_response
from protocol.errors import ErrorCode, KafkaError
from protocol.fast_responses import Buffers

from ..dispatch import describe, dispatch, supported
from ..handler import Later, RequestContext
from ..handlers.api_versions import api_keys
from ..state import BrokerState
from .auth_gate import AuthGate
from .closes import Close
from .framing import MAX_QUEUED_FRAMES, Frame

__all__ = ("RequestHandler", "Response", "ResponseWriter")

Response = bytes | Buffers
_SASL_KEYS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


class RequestHandler:
    """One request frame in, its encoded answer out (None when none is due or the connection closes)."""

    def __init__(self, state: BrokerState, gate: AuthGate, close: Close) -> None:
        self.state = state
        self._gate = gate
        self._close = close
        self.peer = "?"
        # A quota's throttle (broker/quotas): set by the request just handled, then waited out.
        self.throttle_ms = 0

    async def handle(self, frame: Frame) -> Response | Later | None:
        try:
            header, request = decode_request(frame, supported)
        except UnsupportedRequest as exc:
            return self._unsupported(exc.header)
        except RefusedRequest as exc:
            self._close(f"{describe(exc.header)} failed: {exc}")  # as dispatch's null check says it
            return None
        except KafkaError as exc:
            self._close(f"cannot parse request: {exc.message}")
            return None
        return await self._dispatch(header, request)

    def _context(self, header: RequestHeader) -> RequestContext:
        gate = self._gate
        return RequestContext(header=header, broker=self.state, peer=self.peer, session=gate.session, sasl=gate.sasl)

    async def _dispatch(self, header: RequestHeader, request: object) -> Response | Later | None:
        ctx = self._context(header)
        metrics = self.state.metrics
        started = perf_counter() if metrics is not None else 0.0
        try:
            response = await dispatch(ctx, request)
        except KafkaError as exc:
            self._close(f"{describe(header)} failed: {exc}")
            response = None
        if metrics is not None:
            # Kafka's RequestMetrics time: decoded to response ready (the write is queued).
            stats = metrics.request(header.api_key)
            if isinstance(response, asyncio.Future):
                response.add_done_callback(lambda _: stats.observe(header.api_version, perf_counter() - started))
            else:
                stats.observe(header.api_version, perf_counter() - started)
        self.throttle_ms = ctx.throttle_ms
        return response

    def _unsupported(self, header: RequestHeader) -> bytes | None:
        if header.api_key == ApiKey.API_VERSIONS:
            # KIP-511: answer a too-new ApiVersions with a v0 body naming our range.
            body = build(ApiVersionsResponseV0, {
                "error_code": ErrorCode.unsupported_version,
                "api_keys": api_keys(RequestContext(header=header, broker=self.state, peer=self.peer,
                                                    session=self._gate.session)),
            })
            return encode_response(header.correlation_id, body)
        if header.api_key in _SASL_KEYS:
            self._close(f"{describe(header)}: a SASL client on a PLAINTEXT listener (SASL is not enabled)")
            return None
        self._close(f"unsupported request: {describe(header)}")
        return None


class ResponseWriter:
    """Answers out, in the order they are given (the request loop gives them in request order)."""

    def __init__(self, waiting: Sized) -> None:
        self._waiting = waiting  # the frames queued behind the request being answered
        self._loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self._unsent: Buffers = []
        self._flush_scheduled = False

    def send(self, response: Response) -> None:
        """Queue a response. While more requests wait, a small one is held and leaves with the
        responses that follow in one writev: a pipelining producer's five acknowledgements cost
        one send, not five. It is held no longer than this turn of the event loop (a request that
        has to wait sends it at once), so the client sees no extra delay but the handling of the
        requests queued behind it."""
        pending = self._unsent
        if type(response) is list:  # a Fetch's buffers: its record bytes go out uncopied
            pending.extend(response)
        else:
            pending.append(response)  # type: ignore[arg-type]
            if self._waiting and len(pending) < MAX_QUEUED_FRAMES:
                if not self._flush_scheduled:
                    self._flush_scheduled = True
                    self._loop.call_soon(self.flush)
                return
        self.flush()

    def flush(self) -> None:
        self._flush_scheduled = False
        pending = self._unsent
        if not pending:
            return
        self._unsent = []
        if self.transport is None or self.transport.is_closing():
            return
        if len(pending) == 1:
            self.transport.write(pending[0])
        else:
            self.transport.writelines(pending)
