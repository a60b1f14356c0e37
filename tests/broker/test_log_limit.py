"""The bound on connection-close log lines, with a hand-stepped clock."""

from broker.log_limit import LogLimit


def test_a_burst_then_the_rate_and_a_count_of_what_was_left_out():
    now = [0.0]
    limit = LogLimit(per_second=2, burst=3, clock=lambda: now[0])
    assert [limit.allow() for _ in range(5)] == [0, 0, 0, None, None]
    now[0] = 0.5  # one token back
    assert limit.allow() == 2  # written, after saying two were left out
    assert limit.allow() is None
    now[0] = 100.0  # refills to the burst, no further
    assert [limit.allow() for _ in range(4)] == [1, 0, 0, None]
