"""Kafka's quota rate and throttle time, stepped by hand."""

from broker.quotas.rate import SampledRate


def test_a_first_burst_is_measured_over_samples_minus_one_windows():
    rate = SampledRate(samples=11, window_ms=1000)
    rate.record(10_000, now_ms=0)
    assert rate.window_size_ms(0) == 10_000  # at least 10 whole windows
    assert rate.rate(0) == 1_000.0


def test_throttle_is_the_time_back_down_to_the_bound():
    rate = SampledRate(samples=11, window_ms=1000)
    rate.record(30_000, now_ms=0)  # 3,000 B/s over the 10 s window
    assert rate.throttle_ms(1_000, 0) == 20_000  # (3000 - 1000) / 1000 * 10 s
    assert rate.throttle_ms(3_000, 0) == 0  # at the bound is within it


def test_old_windows_expire():
    rate = SampledRate(samples=3, window_ms=1000)
    rate.record(1_000, now_ms=0)
    rate.record(1_000, now_ms=1_000)
    # 1.5 s elapsed, one whole window: measured over 1.5 s plus the one missing of samples - 1.
    assert rate.rate(1_500) == 2_000 * 1000 / 2_500
    assert rate.rate(3_000) == 1_000 * 1000 / 2_000  # the first expired (3 windows old)
    assert rate.rate(10_000) == 0.0


def test_a_window_longer_than_the_minimum_is_measured_as_it_is():
    rate = SampledRate(samples=3, window_ms=1000)
    rate.record(600, now_ms=0)
    rate.record(600, now_ms=2_500)
    assert rate.window_size_ms(2_500) == 2_500
    assert rate.rate(2_500) == 1_200 * 1000 / 2_500


def test_a_negative_record_takes_back_what_was_counted():
    rate = SampledRate()
    rate.record(5_000, now_ms=0)
    rate.record(-5_000, now_ms=0)
    assert rate.rate(0) == 0.0 and rate.throttle_ms(1, 0) == 0
