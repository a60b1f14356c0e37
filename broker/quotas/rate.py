"""The rate a byte-rate quota is held to, measured as Kafka's quota sensors measure it.

Kafka's Rate over a SampledStat: what was recorded in the last `samples` windows of `window_ms`
(quota.window.num = 11 and quota.window.size.seconds = 1 by default), divided by the time those
windows span, counted as at least samples - 1 whole windows so that a new client's first burst
is not measured over a few milliseconds. A client over its quota is throttled for as long as it
takes its rate to come back down to it: (rate - quota) / quota * window. Pure: time is an argument.
"""

from __future__ import annotations

from collections import deque

__all__ = ("SampledRate",)


class SampledRate:
    __slots__ = ("_samples", "samples", "window_ms")

    def __init__(self, samples: int = 11, window_ms: int = 1000) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._samples: deque[list[float]] = deque()  # [start ms, value recorded in it]

    def record(self, value: float, now_ms: float) -> None:
        self._purge(now_ms)
        samples = self._samples
        if not samples or now_ms >= samples[-1][0] + self.window_ms:
            samples.append([now_ms, 0.0])
            if len(samples) > self.samples:
                samples.popleft()
        samples[-1][1] += value

    def total(self, now_ms: float) -> float:
        """What the current windows hold."""
        self._purge(now_ms)
        return sum(value for _, value in self._samples)

    def rate(self, now_ms: float) -> float:
        """Per second, over the current windows."""
        return self.total(now_ms) * 1000.0 / self.window_size_ms(now_ms)

    def window_size_ms(self, now_ms: float) -> float:
        elapsed = now_ms - self._samples[0][0] if self._samples else 0.0
        full = int(elapsed // self.window_ms)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return elapsed

    def throttle_ms(self, bound: float, now_ms: float) -> int:
        """How long a client at this rate waits to be back within `bound` (0 if it is)."""
        rate = self.rate(now_ms)
        if rate <= bound:
            return 0
        return round((rate - bound) / bound * self.window_size_ms(now_ms))

    def _purge(self, now_ms: float) -> None:
        expire = self.samples * self.window_ms
        samples = self._samples
        while samples and now_ms - samples[0][0] >= expire:
            samples.popleft()
