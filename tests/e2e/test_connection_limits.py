"""issue 9: the network edge under clients that misbehave: dead connections release their buffers
at once, partial frames are bounded by queued.max.request.bytes, idle and slowloris connections
are closed, and TLS or SASL clients on the PLAINTEXT port get one clear log line per connection.
After each, the broker still serves real clients."""

from __future__ import annotations

import datetime
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic

from tests.broker_process import BrokerProcess
from tests.kafka_wire import RawClient, closed_by_peer

pytestmark = pytest.mark.e2e

WAIT_S = 30.0
MIB = 1 << 20
IDLE_MS = 400
RECEIVE_TIMEOUT_MS = 600


def status_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def serves(broker: BrokerProcess) -> None:
    """A confluent-kafka producer gets an acknowledgement."""
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce("witness", b"still here")
    assert producer.flush(WAIT_S) == 0


def send_partial_frames(broker: BrokerProcess, clients: int, announce: int, send: int) -> None:
    """`clients` connections at once, each announcing a frame of `announce` bytes, sending `send`
    of them (as far as the broker reads within WAIT_S) and closing without finishing it."""
    host, port = broker.bootstrap.rsplit(":", 1)
    chunk = b"\0" * MIB

    def one() -> None:
        with socket.create_connection((host, int(port)), timeout=WAIT_S) as sock:
            sock.sendall(struct.pack(">i", announce))
            try:
                for _ in range(send // MIB):
                    sock.sendall(chunk)
            except (TimeoutError, ConnectionError):
                pass

    threads = [threading.Thread(target=one) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def big_mappings(pid: int) -> str:
    """Where the broker's resident memory sits: the heap and every mapping of 16 MiB or more (a
    frame received into a mapping of its own versus malloc's heap), for a failure's message."""
    parts, name, size = [], "", 0
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and not fields[0].endswith(":"):
                start, end = (int(x, 16) for x in fields[0].split("-"))
                name, size = (fields[5] if len(fields) > 5 else "anon"), end - start
            elif fields[0] == "Rss:" and (name == "[heap]" or size >= 16 * MIB):
                parts.append(f"{name} {size >> 20} MiB mapped, {int(fields[1]) >> 10} MiB resident")
    return "; ".join(parts)


def wait_rss_below(pid: int, limit_kib: int) -> int:
    deadline = time.monotonic() + 10
    while (rss := status_kib(pid, "VmRSS")) >= limit_kib and time.monotonic() < deadline:
        time.sleep(0.05)
    return rss


def test_closed_connections_release_their_partial_frames_at_once(broker_factory) -> None:  # type: ignore[no-untyped-def]
    """Eight clients send 28 MiB of a 30 MiB frame and close, three times, with the memory budget
    off (-1, Kafka's default): the broker's RSS returns to where it was after each round, with no
    garbage collection forced (before the fix a reference cycle kept every buffer)."""
    broker = broker_factory({"socket.request.max.bytes": str(64 * MIB), "queued.max.request.bytes": "-1"})
    assert broker.proc is not None
    serves(broker)
    baseline = status_kib(broker.proc.pid, "VmRSS")
    for _ in range(3):
        send_partial_frames(broker, clients=8, announce=30 * MIB, send=28 * MIB)
        rss = wait_rss_below(broker.proc.pid, baseline + 64 * 1024)
        print(f"RSS {baseline >> 10} MiB before, {rss >> 10} MiB after 8 clients closed")
        assert rss < baseline + 64 * 1024, \
            f"RSS {rss >> 10} MiB after the clients closed; was {baseline >> 10} ({big_mappings(broker.proc.pid)})"
    assert status_kib(broker.proc.pid, "VmHWM") > baseline + 100 * 1024  # the frames were buffered
    serves(broker)


def test_partial_frames_stay_within_queued_max_request_bytes(broker_factory) -> None:  # type: ignore[no-untyped-def]
    """The same eight clients against a 64 MiB budget: at most two 30 MiB frames are received at
    a time (the others are not read until memory frees), so the peak RSS grows by about the
    budget, not by eight frames."""
    broker = broker_factory({"socket.request.max.bytes": str(64 * MIB),
                             "queued.max.request.bytes": str(64 * MIB)})
    assert broker.proc is not None
    serves(broker)
    peak_before = status_kib(broker.proc.pid, "VmHWM")
    for _ in range(2):
        send_partial_frames(broker, clients=8, announce=30 * MIB, send=28 * MIB)
    growth_mib = (status_kib(broker.proc.pid, "VmHWM") - peak_before) >> 10
    print(f"peak RSS {peak_before >> 10} MiB before, grew by {growth_mib} MiB")
    assert growth_mib < 64 + 48, f"peak RSS grew by {growth_mib} MiB with a 64 MiB budget"
    serves(broker)


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("limits") / "data", {
        "connections.max.idle.ms": str(IDLE_MS),
        "socket.request.receive.timeout.ms": str(RECEIVE_TIMEOUT_MS),
    }).start() as proc:
        admin = AdminClient({"bootstrap.servers": proc.bootstrap})
        for f in admin.create_topics([NewTopic("witness", 1, 1)]).values():
            f.result(WAIT_S)
        yield proc


def closing_lines(broker: BrokerProcess, port: int) -> list[str]:
    # The broker logs before it closes, but the test's pump thread may not have read the line yet
    # when the client sees the close.
    broker.wait_for_log(f"closing connection from 127.0.0.1:{port}:")
    return [line for line in broker.log_lines if f"closing connection from 127.0.0.1:{port}:" in line]


def test_idle_connection_is_closed_with_one_line(limited: BrokerProcess) -> None:
    with RawClient(limited.bootstrap, timeout=WAIT_S) as client:
        client.request(ApiVersionsRequest(client_software_name="idle", client_software_version="1"))
        assert closed_by_peer(client.sock)
        port = client.sock.getsockname()[1]
    lines = closing_lines(limited, port)
    assert len(lines) == 1 and " INFO " in lines[0]
    assert f"connections.max.idle.ms={IDLE_MS}" in lines[0]
    serves(limited)


def test_a_request_in_progress_is_not_idle(limited: BrokerProcess) -> None:
    """A Fetch that waits longer than connections.max.idle.ms still gets its answer."""
    fetch = FetchRequest(
        replica_id=-1, max_wait=datetime.timedelta(milliseconds=3 * IDLE_MS), min_bytes=1 << 20,
        max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
        topics=(FetchTopic(topic="witness", partitions=(FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=1 << 40, last_fetched_epoch=-1,
            log_start_offset=-1, partition_max_bytes=1 << 20),)),),
        forgotten_topics_data=(), rack_id="")
    with RawClient(limited.bootstrap, timeout=WAIT_S) as client:
        response = client.request(fetch)
    assert response.error_code == 0


def test_slowloris_frame_is_closed_after_the_receive_timeout(limited: BrokerProcess) -> None:
    """A peer that announces a frame and trickles it a byte at a time is never idle; the broker
    closes it once the frame has taken socket.request.receive.timeout.ms."""
    with RawClient(limited.bootstrap, timeout=WAIT_S) as client:
        port = client.sock.getsockname()[1]
        client.send_raw(struct.pack(">i", 100) + b"\0" * 10)
        deadline = time.monotonic() + WAIT_S
        try:
            while time.monotonic() < deadline:
                client.send_raw(b"\0")
                time.sleep(0.1)  # the trickle itself, not synchronisation
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert closed_by_peer(client.sock)
    lines = closing_lines(limited, port)
    assert len(lines) == 1 and f"socket.request.receive.timeout.ms={RECEIVE_TIMEOUT_MS}" in lines[0]
    serves(limited)


@pytest.mark.parametrize(("security", "line"), [
    ({"security.protocol": "SSL"}, "looks like a TLS ClientHello on a PLAINTEXT listener"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "u",
      "sasl.password": "p"}, "a SASL client on listener PLAINTEXT (PLAINTEXT), which has no SASL"),
], ids=["ssl", "sasl_plaintext"])
def test_tls_and_sasl_clients_get_one_clear_line_per_connection(
    limited: BrokerProcess, security: dict[str, str], line: str
) -> None:
    seen = len(limited.log_lines)
    admin = AdminClient({"bootstrap.servers": limited.bootstrap, "reconnect.backoff.ms": 200,
                         "log_level": 0, **security})
    with pytest.raises(Exception, match="transport failure|timed out"):
        admin.list_topics(timeout=2)
    del admin
    new = limited.log_lines[seen:]
    assert any(line in entry for entry in new)
    assert not any("exceeds socket.request.max.bytes" in entry for entry in new)
    # One line per connection: each peer port is named once.
    peers = [entry.split(" from ")[1].split(":")[1] for entry in new if line in entry]
    assert len(peers) == len(set(peers))
    serves(limited)
