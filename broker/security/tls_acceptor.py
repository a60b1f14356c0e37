"""The TLS layer of an SSL or SASL_SSL connection, with failed handshakes logged.

asyncio's create_server(ssl=...) would wrap each connection in the same SSLProtocol (uvloop's, in
Cython, when the broker runs on uvloop), but a failed handshake would vanish without a word:
asyncio logs TLS errors only in debug mode. Here the protocol is built with a waiter of our own,
so a failure is one WARNING naming the peer, the listener and OpenSSL's reason (an untrusted or
expired client certificate, a plaintext client on a TLS port), and the connection closes while the
broker serves the others. The Kafka connection sees connection_made only once the handshake is done.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from typing import Any, Final

__all__ = ("HANDSHAKE_TIMEOUT_S", "tls_protocol_factory")

log = logging.getLogger("broker.security")
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


def _ssl_protocol_class() -> type:
    """The running loop's own SSLProtocol (uvloop's or asyncio's), with the peer remembered."""
    loop = asyncio.get_running_loop()
    base: type
    try:
        import uvloop

        base = uvloop.loop.SSLProtocol if isinstance(loop, uvloop.Loop) else asyncio.sslproto.SSLProtocol
    except ImportError:  # pragma: no cover - uvloop is a dependency
        base = asyncio.sslproto.SSLProtocol

    class PeerSSLProtocol(base):  # type: ignore[valid-type, misc]
        peer = "?"

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            peer = transport.get_extra_info("peername")
            if peer:
                self.peer = f"{peer[0]}:{peer[1]}"
            super().connection_made(transport)

    return PeerSSLProtocol


def tls_protocol_factory(context: ssl.SSLContext, listener: str,
                         make_connection: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.BaseProtocol]:
    """A create_server protocol factory: TLS around what `make_connection` builds."""
    protocol_class = _ssl_protocol_class()

    def factory() -> asyncio.BaseProtocol:
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        protocol: Any = protocol_class(loop, make_connection(), context, waiter, server_side=True,
                                       call_connection_made=True, ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S)

        def done(future: asyncio.Future[None]) -> None:
            if not future.cancelled() and (exc := future.exception()) is not None:
                log.warning("TLS handshake with %s on listener %s failed: %s", protocol.peer, listener, _why(exc))

        waiter.add_done_callback(done)
        return protocol  # type: ignore[no-any-return]

    return factory
