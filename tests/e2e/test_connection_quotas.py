"""Connection limits with a real broker: max.connections.per.ip (and its overrides) and
max.connections close the connections past them with one INFO line each, a connection_creation_rate
quota set with kafka-configs --entity-type ips closes a burst's extra connections, the limits change
at run time with kafka-configs, and real clients keep working within them."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from tests.broker_process import BrokerProcess
from tests.e2e.test_kafka_tools import tool
from tests.kafka_wire import RawClient, closed_by_peer

WAIT_S = 30.0
API_VERSIONS = ApiVersionsRequest(client_software_name="t", client_software_version="1")


@pytest.fixture
def broker(tmp_path) -> Iterator[BrokerProcess]:  # type: ignore[no-untyped-def]
    proc = BrokerProcess(tmp_path / "data", {"max.connections.per.ip": "4", "quota.window.num": "2"}).start()
    yield proc
    proc.close()


def connect(broker: BrokerProcess, n: int) -> list[socket.socket]:
    host, port = broker.bootstrap.rsplit(":", 1)
    return [socket.create_connection((host, int(port)), timeout=WAIT_S) for _ in range(n)]


def serves(sock: socket.socket) -> bool:
    """Whether the connection answers ApiVersions."""
    client = RawClient.__new__(RawClient)
    client.sock, client._correlation_id = sock, 0
    try:
        return client.request(API_VERSIONS).error_code.value == 0
    except (ConnectionError, OSError, AssertionError):
        return False


def closed_soon(sock: socket.socket) -> bool:
    sock.settimeout(WAIT_S)
    return closed_by_peer(sock)


def test_connections_past_the_per_ip_limit_are_closed(broker: BrokerProcess) -> None:
    socks = connect(broker, 6)
    try:
        assert all(serves(s) for s in socks[:4])
        assert all(closed_soon(s) for s in socks[4:])
        assert broker.wait_for_log(r"Rejected connection from 127\.0\.0\.1, address already has the configured "
                                   r"maximum of 4 connections\.")
        # One closes: a new one fits again.
        socks[0].close()
        time.sleep(0.5)
        [again] = connect(broker, 1)
        socks.append(again)
        assert serves(again)
    finally:
        for s in socks:
            s.close()


def admitted(broker: BrokerProcess, n: int) -> list[bool]:
    """Open n connections at once: which of them serve (the others must be closed by the broker)."""
    time.sleep(0.5)  # connections of a tool run just before are gone by now
    socks = connect(broker, n)
    try:
        served = [serves(s) for s in socks]
        assert all(closed_soon(s) for s, ok in zip(socks, served, strict=True) if not ok)
        return served
    finally:
        for s in socks:
            s.close()


def test_limits_change_at_run_time(broker: BrokerProcess) -> None:
    tool(broker, "kafka-configs", "--alter", "--entity-type", "brokers", "--entity-default", "--add-config",
         "max.connections.per.ip.overrides=127.0.0.1:2")
    assert admitted(broker, 3) == [True, True, False]
    tool(broker, "kafka-configs", "--alter", "--entity-type", "brokers", "--entity-default", "--delete-config",
         "max.connections.per.ip.overrides", "--add-config", "max.connections=3")
    assert admitted(broker, 4) == [True, True, True, False]
    assert broker.wait_for_log(r"the broker already has max\.connections=3 connections")


def test_an_ip_connection_rate_quota_closes_a_burst(broker: BrokerProcess) -> None:
    tool(broker, "kafka-configs", "--alter", "--entity-type", "ips", "--entity-default", "--add-config",
         "connection_creation_rate=2")
    assert "connection_creation_rate=2.0" in tool(broker, "kafka-configs", "--describe", "--entity-type", "ips",
                                                  "--entity-default")
    time.sleep(2)  # the tool's own connections leave the 2 s window
    answered = admitted(broker, 4)
    assert answered.count(True) >= 1 and answered.count(False) >= 1, answered
    assert broker.wait_for_log(r"Connection from 127\.0\.0\.1 throttled for \d+ ms")
    tool(broker, "kafka-configs", "--alter", "--entity-type", "ips", "--entity-default", "--delete-config",
         "connection_creation_rate")


def test_a_peer_misbehaving_in_a_loop_does_not_flood_the_log(broker: BrokerProcess) -> None:
    """Each connection sends a Fetch version the broker does not serve and is closed, 1000 times in
    a row (as Kafka's ReplicaVerificationTool did with v18 while the broker stopped at v12): the
    first 200 close lines, then 50 a second, and a line saying how many were left out."""
    start = len(broker.log_lines)
    host, port = broker.bootstrap.rsplit(":", 1)
    frame = struct.pack(">ihhih", 10, 1, 19, 1, -1)  # Fetch v19 (past the broker's 18), no body
    for _ in range(1000):
        with socket.create_connection((host, int(port)), timeout=WAIT_S) as sock:
            sock.sendall(frame)
            assert closed_soon(sock)
    assert broker.wait_for_log(r"connection closes were not logged: more than 50 a second", since=start)
    closes = [line for line in broker.log_lines[start:] if "closing connection" in line]
    assert 200 <= len(closes) < 800, len(closes)
    assert admitted(broker, 1) == [True]


def test_a_client_within_the_limits_works(broker: BrokerProcess) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("within", b"%d" % i)
    assert producer.flush(WAIT_S) == 0
