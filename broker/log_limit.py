"""A bound on how fast one kind of log line may be written.

A connection closed for what its peer sent is logged in one line, and so is one refused by the
connection limits. A peer that reconnects and misbehaves in a loop (Kafka's ReplicaVerificationTool
sends a Fetch version eosbroker does not serve, ~700 times a second) would otherwise write lines as
fast as it connects: anyone who can reach the port could fill the disk the log is on. So such lines
draw from a bucket of `burst` that refills at `per_second`; what the bucket holds back is counted,
and the next line written says how many were left out.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ("LogLimit",)


class LogLimit:
    __slots__ = ("burst", "per_second", "_clock", "_tokens", "_last", "suppressed")

    def __init__(self, per_second: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_second, self.burst = per_second, burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        self.suppressed = 0

    def allow(self) -> int | None:
        """None: leave this line out (counted). Otherwise write it, after saying that the returned
        number of lines were left out since the last one written (0: none)."""
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.per_second)
        self._last = now
        if self._tokens < 1:
            self.suppressed += 1
            return None
        self._tokens -= 1
        left_out, self.suppressed = self.suppressed, 0
        return left_out
