"""The TLS layer of an SSL or SASL_SSL connection, with failed handshakes logged.

asyncio's create_server(ssl=...) would wrap each connection in the same SSLProtocol (uvloop's, in
Cython, when the broker runs on uvloop), but a failed handshake would vanish without a word:
asyncio logs TLS errors only in debug mode. Here the protocol is built with a waiter of our own,
so a failure is one WARNING naming the peer, the listener and OpenSSL's reason (an untrusted or
expired client certificate, a plaintext client on a TLS port; rate-limited per peer address by
failure_log), and the connection closes while the broker serves the others. The Kafka connection
sees connection_made only once the handshake is done; until then the raw transport is in the
`handshaking` set the broker passes, which it aborts when it stops.
"""

from __future__ import annotations

import asyncio
import ssl
from asyncio import sslproto
from collections.abc import Callable
from typing import Any, Final

from .failure_log import failure_log

__all__ = ("HANDSHAKE_TIMEOUT_S", "tls_protocol_factory")

# A client that has not finished its handshake by then is dropped (asyncio's default is 60 s).
HANDSHAKE_TIMEOUT_S: Final = 10.0
_NOT_TLS: Final = frozenset({"WRONG_VERSION_NUMBER", "HTTP_REQUEST", "UNKNOWN_PROTOCOL", "RECORD_LAYER_FAILURE",
                             "PACKET_LENGTH_TOO_LONG"})


def _why(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        reason = exc.reason or str(exc)
        if reason in _NOT_TLS:
            return f"{reason}: not a TLS client (a PLAINTEXT client on a TLS listener?)"
        verify = getattr(exc, "verify_message", None)
        return f"{reason}: {verify}" if verify else reason
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return f"no handshake within {HANDSHAKE_TIMEOUT_S:g} s"
    return str(exc) or type(exc).__name__


class _Accepting:
    transport: asyncio.BaseTransport | None = None


_accepting: Final = _Accepting()  # the connection whose SSLObject is being made (one thread: the loop's)


class AlertingSSLObject(ssl.SSLObject):
    """An SSLObject that sends the TLS alert of a failed handshake before the connection closes.

    uvloop's SSLProtocol (and asyncio's) closes the transport on a handshake error without writing
    what OpenSSL queued for the peer: the alert saying why (certificate_expired, unknown_ca, ...).
    Under TLS 1.3 a client completes its side of the handshake before the server has checked its
    certificate, so without the alert it only sees the connection close, and retries: Java's client
    would time out instead of failing with SslAuthenticationException, as it does against Kafka.
    Only do_handshake is wrapped; reads and writes are SSLObject's own."""

    _transport: asyncio.BaseTransport | None
    _alerts: ssl.MemoryBIO

    @classmethod
    def _create(cls, incoming: ssl.MemoryBIO, outgoing: ssl.MemoryBIO, *args: object,
                **kwargs: object) -> AlertingSSLObject:  # SSLObject._create's own arguments, passed on
        self: AlertingSSLObject = super()._create(incoming, outgoing, *args, **kwargs)  # type: ignore[misc]
        self._transport, self._alerts = _accepting.transport, outgoing
        return self

    def do_handshake(self) -> None:
        try:
            super().do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise
        except ssl.SSLError:
            # uvloop's transports are not asyncio.WriteTransport subclasses, so no isinstance here
            # Dynamic: asyncio's private SSL transport.
            transport: Any = self._transport
            alert = self._alerts.read()
            if alert and transport is not None and not transport.is_closing():
                transport.write(alert)  # a few bytes into an empty buffer: sent before the close
            raise


def _ssl_protocol_class(handshaking: set[asyncio.BaseTransport]) -> type:
    """The running loop's own SSLProtocol (uvloop's or asyncio's), with the peer remembered."""
    loop = asyncio.get_running_loop()
    base: type
    try:
        import uvloop

        # uvloop's stubs do not declare its SSLProtocol
        base = uvloop.loop.SSLProtocol if isinstance(loop, uvloop.Loop) else sslproto.SSLProtocol  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - uvloop is a dependency
        base = sslproto.SSLProtocol

    class PeerSSLProtocol(base):  # type: ignore[misc]
        peer = "?"
        raw: asyncio.BaseTransport | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            peer = transport.get_extra_info("peername")
            if peer:
                self.peer = f"{peer[0]}:{peer[1]}"
            self.raw = transport
            handshaking.add(transport)
            # The SSLObject is made within super().connection_made: it takes this transport then.
            _accepting.transport = transport
            try:
                super().connection_made(transport)
            finally:
                _accepting.transport = None

        def connection_lost(self, exc: Exception | None) -> None:
            self.handshake_over()
            super().connection_lost(exc)

        def handshake_over(self) -> None:
            if self.raw is not None:
                handshaking.discard(self.raw)

    return PeerSSLProtocol


def tls_protocol_factory(context: ssl.SSLContext, listener: str, make_connection: Callable[[], asyncio.BaseProtocol],
                         handshaking: set[asyncio.BaseTransport]) -> Callable[[], asyncio.BaseProtocol]:
    """A create_server protocol factory: TLS around what `make_connection` builds."""
    protocol_class = _ssl_protocol_class(handshaking)
    context.sslobject_class = AlertingSSLObject

    def factory() -> asyncio.BaseProtocol:
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        # Dynamic: asyncio's private SSLProtocol.
        protocol: Any = protocol_class(loop, make_connection(), context, waiter, server_side=True,
                                       call_connection_made=True, ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S)

        def done(future: asyncio.Future[None]) -> None:
            protocol.handshake_over()
            if not future.cancelled() and (exc := future.exception()) is not None:
                why = _why(exc)
                failure_log.warning(protocol.peer.rpartition(":")[0], f"TLS on listener {listener}: {why}",
                                    "TLS handshake with %s on listener %s failed: %s", protocol.peer, listener, why)

        waiter.add_done_callback(done)
        return protocol  # type: ignore[no-any-return]

    return factory
