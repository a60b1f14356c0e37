"""Connection limits at accept (Kafka's ConnectionQuotas), with the clock stepped by hand."""

import dataclasses

from broker.config import BrokerConfig
from broker.connection_limits import ConnectionLimits, Verdict, parse_overrides, protected
from broker.listeners import Listener

BASE = BrokerConfig()


def config(**changes):  # type: ignore[no-untyped-def]
    return dataclasses.replace(BASE, **changes)


def listener(name: str, port: int) -> Listener:
    return Listener(name=name, security_protocol="PLAINTEXT", host="h", port=port, advertised_host="h",
                    advertised_port=None)


def test_per_ip_limit_and_its_overrides():
    limits = ConnectionLimits()
    cfg = config(max_connections_per_ip=2, max_connections_per_ip_overrides="10.0.0.9:0, 10.0.0.8:3")
    assert [limits.admit(cfg, "10.0.0.1", "PLAINTEXT", None, 0).verdict for _ in range(3)] == [
        Verdict.ADMIT, Verdict.ADMIT, Verdict.REFUSE]
    refused = limits.admit(cfg, "10.0.0.1", "PLAINTEXT", None, 0)
    assert refused.why == ("Rejected connection from 10.0.0.1, address already has the configured maximum of 2 "
                           "connections.")
    assert limits.admit(cfg, "10.0.0.9", "PLAINTEXT", None, 0).verdict is Verdict.REFUSE
    assert [limits.admit(cfg, "10.0.0.8", "PLAINTEXT", None, 0).verdict for _ in range(4)].count(Verdict.ADMIT) == 3
    limits.release("10.0.0.1")
    assert limits.admit(cfg, "10.0.0.1", "PLAINTEXT", None, 0).verdict is Verdict.ADMIT
    assert limits.total == 5 and limits.by_ip == {"10.0.0.1": 2, "10.0.0.8": 3}


def test_max_connections_spares_only_a_separate_inter_broker_listener():
    one = config(max_connections=1)
    limits = ConnectionLimits()
    assert limits.admit(one, "a", "PLAINTEXT", None, 0).verdict is Verdict.ADMIT
    refused = limits.admit(one, "b", "PLAINTEXT", None, 0)
    assert refused.verdict is Verdict.REFUSE and "max.connections=1" in refused.why
    two = dataclasses.replace(one, listener_endpoints=(listener("PLAINTEXT", 1), listener("CLIENT", 2)))
    assert protected(two, "PLAINTEXT") and not protected(two, "CLIENT") and not protected(one, "PLAINTEXT")
    assert limits.admit(two, "b", "PLAINTEXT", None, 0).verdict is Verdict.ADMIT
    assert limits.admit(two, "c", "CLIENT", None, 0).verdict is Verdict.REFUSE


def test_creation_rate_delays_reading_past_the_rate():
    cfg = config(max_connection_creation_rate=1)
    limits = ConnectionLimits(samples=2, window_ms=1000)
    first = limits.admit(cfg, "a", "PLAINTEXT", None, 0)
    second = limits.admit(cfg, "a", "PLAINTEXT", None, 0)
    assert (first.verdict, first.delay_ms) == (Verdict.ADMIT, 0)
    assert (second.verdict, second.delay_ms) == (Verdict.ADMIT, 1000)  # 2/s against 1/s over 1 s


def test_an_ip_rate_quota_throttles_and_does_not_count_the_refused():
    limits = ConnectionLimits(samples=2, window_ms=1000)
    assert limits.admit(BASE, "a", "PLAINTEXT", 1.0, 0).verdict is Verdict.ADMIT
    throttled = limits.admit(BASE, "a", "PLAINTEXT", 1.0, 0)
    assert (throttled.verdict, throttled.delay_ms) == (Verdict.THROTTLE, 1000)
    assert "Connection from a throttled for 1000 ms" in throttled.why
    assert limits.by_ip == {"a": 1}
    assert limits.admit(BASE, "b", "PLAINTEXT", 1.0, 0).verdict is Verdict.ADMIT  # per address
    assert limits.admit(BASE, "a", "PLAINTEXT", 1.0, 2_000).verdict is Verdict.ADMIT  # the window moved on


def test_overrides_parse_hosts_and_addresses():
    assert parse_overrides("") == {}
    assert parse_overrides("127.0.0.1:5, ::1:7") == {"127.0.0.1": 5, "::1": 7}
    assert parse_overrides("localhost:3")["127.0.0.1"] == 3
