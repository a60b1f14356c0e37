"""issue 9: no frame may crash the broker. Mutated real requests of every advertised API and
version go to the broker process, one connection each (a malformed frame closes its connection);
afterwards the process is alive, its RSS has not grown without bound, and a confluent-kafka
producer and consumer (the witness) are served.

EOS_FUZZ_FRAMES sets how many frames (small by default so the suite stays quick; `make fuzz` sends
many more), EOS_FUZZ_SEED replays a run (the seed is printed and kept in the failure message).
"""

from __future__ import annotations

import os
import random
import socket
import struct
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from broker.dispatch import HANDLERS
from tests.broker_process import BrokerProcess
from tests.frame_fuzz import count_mutation, random_mutation, sample_frame
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e

FRAMES = int(os.environ.get("EOS_FUZZ_FRAMES", "15000"))
SEED = int(os.environ.get("EOS_FUZZ_SEED", str(random.randrange(1 << 32))))
RSS_GROWTH_LIMIT = 200 << 20
LIVENESS_EVERY = 250
WAIT_S = 30.0
# Every API and version in the dispatch table: what ApiVersions advertises, refused versions too.
ADVERTISED = sorted(
    (int(key), version)
    for key, handler in HANDLERS.items()
    for version in range(handler.min_version, handler.max_version + 1)
)


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))


def advertised_frame(api_key: int, version: int, correlation_id: int) -> bytes:
    """The sample request; for versions advertised but not parsed (Produce v0-2, which kio has no
    schema for) the lowest parsed version's sample relabelled with that version."""
    handler = HANDLERS[api_key]  # type: ignore[index]
    if handler.parses(version):
        return sample_frame(api_key, version, correlation_id)
    lowest = sample_frame(api_key, handler.parse_min_version or handler.min_version, correlation_id)
    return lowest[:2] + struct.pack(">h", version) + lowest[4:]


def mutated_frames(rng: random.Random, count: int) -> list[bytes]:
    """Half lying counts and lengths (at a random position of a sample request), half random
    mutations (patterns, bit flips, truncation, trailing bytes), over every API and version."""
    frames = []
    for i in range(count):
        api_key, version = ADVERTISED[i % len(ADVERTISED)]
        frame = advertised_frame(api_key, version, correlation_id=i)
        if i % 2:
            frame = count_mutation(frame, rng)
        else:
            for _ in range(rng.randint(1, 3)):
                frame = random_mutation(frame, rng) if len(frame) > 4 else frame
        frames.append(frame)
    return frames


def send(bootstrap: tuple[str, int], payload: bytes, rng: random.Random) -> None:
    """One frame on its own connection, sometimes announcing more bytes than follow."""
    announced = len(payload) + (rng.choice((1, 100, 1 << 20)) if rng.random() < 0.05 else 0)
    with socket.create_connection(bootstrap, timeout=WAIT_S) as sock:
        sock.sendall(struct.pack(">i", announced) + payload)


def api_versions_round_trip(broker: BrokerProcess) -> None:
    with RawClient(broker.bootstrap, timeout=WAIT_S) as client:
        response = client.request(ApiVersionsRequest(client_software_name="fuzz", client_software_version="1"))
    assert response.error_code == 0


def witness(broker: BrokerProcess, topic: str) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(50):
        producer.produce(topic, b"w%d" % i, partition=0)
    assert producer.flush(WAIT_S) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "fuzz-witness"})
    consumer.assign([CTopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < 50 and time.monotonic() < deadline:
        got += [m.value() for m in consumer.consume(50, 0.2) if not m.error()]
    consumer.close()
    assert got == [b"w%d" % i for i in range(50)]


def test_mutated_requests_of_every_api_and_version(broker_factory, capsys) -> None:  # type: ignore[no-untyped-def]
    broker: BrokerProcess = broker_factory({"socket.request.receive.timeout.ms": "2000"})
    # Requests that parse but carry values their handler does not expect get Kafka's errors
    # (tests/e2e/test_request_sweep.py goes through every field); a traceback here is a bug. This
    # test holds the network edge to account too: the process lives, memory stays bounded, frames
    # that do not parse get one line.
    assert broker.proc is not None
    host, port = broker.bootstrap.rsplit(":", 1)
    rng = random.Random(SEED)
    witness(broker, "before")
    frames = mutated_frames(rng, FRAMES)
    # Warm up (schemas loaded, walkers compiled) before the baseline, so growth means a leak.
    for payload in frames[: len(ADVERTISED)]:
        send((host, int(port)), payload, rng)
    api_versions_round_trip(broker)
    rss_before = rss_bytes(broker.proc.pid)

    started = time.monotonic()
    for i, payload in enumerate(frames, 1):
        send((host, int(port)), payload, rng)
        if i % LIVENESS_EVERY == 0:
            assert broker.proc.poll() is None, f"broker died after {i} frames (EOS_FUZZ_SEED={SEED})"
            api_versions_round_trip(broker)
    api_versions_round_trip(broker)
    elapsed = time.monotonic() - started

    rss_after = rss_bytes(broker.proc.pid)
    with capsys.disabled():
        print(f"\nfuzz: {FRAMES} frames in {elapsed:.1f} s ({FRAMES / elapsed:.0f}/s), seed {SEED}, "
              f"broker RSS {rss_before >> 20} -> {rss_after >> 20} MiB")
    assert broker.proc.poll() is None, f"broker died (EOS_FUZZ_SEED={SEED})"
    assert rss_after - rss_before < RSS_GROWTH_LIMIT, f"RSS grew by {(rss_after - rss_before) >> 20} MiB"
    witness(broker, "after")
    assert not network_tracebacks(broker.log_lines), f"traceback at the network edge (EOS_FUZZ_SEED={SEED})"
    assert not broker.logged("MemoryError")


def network_tracebacks(lines: list[str]) -> list[str]:
    """Records of a connection closed for what the peer sent (broker.connection's WARNING and
    INFO lines) that carry a traceback: each such close must be one line and nothing more."""
    found = []
    record = ""
    for line in lines:
        if line.startswith("Traceback") and " broker.connection: closing connection" in record:
            found.append(record)
        elif not line.startswith((" ", "Traceback")):
            record = line
    return found
