"""The log of connection closes, shared by the connection's parts under one logger name."""

from __future__ import annotations

import logging
from typing import Final, Protocol

from ..log_limit import LogLimit

__all__ = ("Close", "log", "log_close")

# One name for every part: operators (and tests/e2e/test_fuzz_frames.py) look for broker.connection.
log = logging.getLogger("broker.connection")

# Closes for what a peer sent and refusals by the connection limits: one line each, at most this
# fast (broker/log_limit.py), so that a client misbehaving in a loop cannot flood the log.
_CLOSE_LOG_LIMIT: Final = LogLimit(per_second=50, burst=200)


class Close(Protocol):
    """How a part closes its connection: one line in the log with the reason, then the close."""

    def __call__(self, reason: str, level: int = logging.WARNING, abort: bool = False) -> None: ...


def log_close(level: int, message: str, *args: object) -> None:
    left_out = _CLOSE_LOG_LIMIT.allow()
    if left_out is None:
        return
    if left_out:
        log.warning("%d connection closes were not logged: more than %d a second", left_out,
                    _CLOSE_LOG_LIMIT.per_second)
    log.log(level, message, *args)
