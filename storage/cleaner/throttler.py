"""log.cleaner.io.max.bytes.per.second: the cleaner's read and write I/O held to a rate on average
(Kafka's Throttler: every check interval, a worker that went faster than the rate sleeps off the
difference, and the count starts over so that a slow spell earns no burst afterwards).

Unlike Kafka's, finish() also settles the last, partial interval: a pass then never averages more
than the rate over its own duration, which its log line and metrics show.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

__all__ = ("CHECK_INTERVAL_S", "UNLIMITED", "Throttler")

CHECK_INTERVAL_S: Final = 0.3  # Kafka's cleaner checks every 300 ms
UNLIMITED: Final = 1.7976931348623157e308  # Kafka's default: Double.MAX_VALUE


class Throttler:
    def __init__(self, bytes_per_second: float, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.rate = bytes_per_second
        self._clock, self._sleep = clock, sleep
        self._period_start = clock()
        self._observed = 0.0
        self.slept = 0.0  # seconds, in total

    @property
    def limited(self) -> bool:
        return self.rate < UNLIMITED

    def maybe_throttle(self, nbytes: int) -> None:
        if not self.limited:
            return
        self._observed += nbytes
        if self._clock() - self._period_start > CHECK_INTERVAL_S:
            self._settle()

    def finish(self) -> None:
        """At the end of a pass: the last interval, however short, is held to the rate too."""
        if self.limited and self._observed > 0:
            self._settle()

    def _settle(self) -> None:
        owed = self._observed / self.rate - (self._clock() - self._period_start)
        if owed > 0:
            self._sleep(owed)
            self.slept += owed
        self._period_start = self._clock()
        self._observed = 0.0
