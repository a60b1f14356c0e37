"""log.cleaner.io.max.bytes.per.second's throttler, on a clock the test moves."""

import pytest

from storage.cleaner.throttler import CHECK_INTERVAL_S, UNLIMITED, Throttler


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _throttler(rate: float) -> tuple[Throttler, FakeClock]:
    clock = FakeClock()
    return Throttler(rate, clock=clock, sleep=clock.sleep), clock


@pytest.mark.parametrize("work_s_per_chunk", [0.0, 0.01, 0.2])
def test_a_pass_never_averages_more_than_the_rate(work_s_per_chunk):
    throttler, clock = _throttler(1_000_000)
    start = clock.now
    total = 0
    for _ in range(57):
        clock.now += work_s_per_chunk
        throttler.maybe_throttle(64 * 1024)
        total += 64 * 1024
    throttler.finish()
    assert total / (clock.now - start) <= 1_000_000 * (1 + 1e-9)
    assert throttler.slept == pytest.approx(sum(clock.sleeps))


def test_nothing_sleeps_below_the_rate_or_within_an_interval():
    throttler, clock = _throttler(1_000_000)
    for _ in range(10):
        clock.now += 0.1
        throttler.maybe_throttle(50_000)  # 0.5 MB/s
    throttler.finish()
    assert clock.sleeps == []
    fast, clock = _throttler(1_000)
    fast.maybe_throttle(10_000)  # far too fast, but the interval has not passed
    assert clock.sleeps == []
    clock.now += CHECK_INTERVAL_S + 0.01
    fast.maybe_throttle(0)
    assert clock.sleeps == [pytest.approx(10.0 - CHECK_INTERVAL_S - 0.01)]


def test_a_slow_spell_earns_no_burst_afterwards():
    throttler, clock = _throttler(1_000_000)
    clock.now += 10  # nothing for 10 s
    throttler.maybe_throttle(1)
    clock.now += 0.01  # then 1 MB in the next 10 ms of a new interval
    throttler.maybe_throttle(1_000_000)
    clock.now += CHECK_INTERVAL_S
    throttler.maybe_throttle(0)
    assert clock.sleeps and clock.sleeps[-1] == pytest.approx(1.0 - 0.01 - CHECK_INTERVAL_S)


def test_unlimited_never_sleeps():
    throttler, clock = _throttler(UNLIMITED)
    for _ in range(100):
        clock.now += 0.1
        throttler.maybe_throttle(1 << 30)
    throttler.finish()
    assert clock.sleeps == [] and not throttler.limited
