"""WARNINGs for failed TLS handshakes and SASL authentications, rate-limited per peer address.

Each failure is worth a WARNING (who, on which listener, why), but a misconfigured client that
reconnects every 50 ms, or a scan of the port, would otherwise write thousands of lines a minute
and bury everything else. So the first failure of a kind from an address is logged as it happens;
the same failure from the same address within the next WINDOW_S seconds is only counted, and one
summary line gives the count when the window ends. The kind is chosen by the caller (listener,
mechanism, reason; never the user name a client sends, which it may vary at will, nor a password).
Peer addresses are tracked up to MAX_PEERS at once; beyond that, failures are counted under one
entry, so a flood from many addresses costs bounded memory and still ends in a summary.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final

__all__ = ("MAX_PEERS", "WINDOW_S", "FailureLog", "failure_log")

WINDOW_S: Final = 60.0
MAX_PEERS: Final = 10_000
_OTHERS: Final = "(other addresses)"


class FailureLog:
    def __init__(self, logger: logging.Logger, window_s: float = WINDOW_S, max_peers: int = MAX_PEERS,
                 call_later: Callable[[float, Callable[[], None]], object] | None = None) -> None:
        self._log = logger
        self._window_s = window_s
        self._max_peers = max_peers
        self._call_later = call_later
        # (address, kind) -> failures not logged since the line that opened the window
        self._suppressed: dict[tuple[str, str], int] = {}

    def warning(self, address: str, kind: str, message: str, *args: object) -> None:
        """Log `message % args` unless `kind` already failed from `address` in this window."""
        key = (address, kind)
        if key not in self._suppressed and len(self._suppressed) >= self._max_peers:
            key = (_OTHERS, kind)
        if key in self._suppressed:
            self._suppressed[key] += 1
            return
        self._suppressed[key] = 0
        self._log.warning(message, *args)
        self._schedule(key)

    def _schedule(self, key: tuple[str, str]) -> None:
        call_later = self._call_later
        if call_later is None:
            try:
                call_later = asyncio.get_running_loop().call_later
            except RuntimeError:  # no event loop (a unit test of the caller): nothing to end a window
                del self._suppressed[key]
                return
        call_later(self._window_s, lambda: self.end_window(key))

    def end_window(self, key: tuple[str, str]) -> None:
        """The window of `key` is over: its count, if any, is logged, and its next failure is too."""
        count = self._suppressed.pop(key, 0)
        if count:
            address, kind = key
            self._log.warning("%d more of the same failure (%s) from %s in the last %g s, not logged one by one",
                              count, kind, address, self._window_s)


# One per broker process, shared by the TLS acceptor and the SASL authenticator: both log to it.
failure_log: Final = FailureLog(logging.getLogger("broker.security"))
