"""A long poll (min_bytes above what one read returns) ends at once when the fetch offset lies on a
segment older than the one holding the high watermark, as Kafka's DelayedFetch does ("fetching
older segments", case F): a read stops at a segment's end, so more is ready than was read.
kafka-go's TestReaderReadCompactedMessage (MinBytes=MaxBytes=200, MaxWait 100 ms, segment.bytes
200) read past a batch whose tail was compacted away only when the fetch came back before its
deadline; waiting out max_wait made it retry the same offset until its two minutes were up."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import request_schema
from protocol.errors import ErrorCode
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e

TOPIC = "small-segments"
BATCHES = 12


def fetch(client: RawClient, offset: int, max_wait_ms: int) -> tuple[float, int, int]:
    """(seconds taken, bytes of records, high watermark) of a Fetch wanting 1 MiB."""
    request = build(request_schema(ApiKey.FETCH, 11), {
        "max_wait": max_wait_ms, "min_bytes": 1 << 20, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
        "topics": [{"topic": TOPIC, "partitions": [{"partition": 0, "fetch_offset": offset,
                                                   "partition_max_bytes": 1 << 20}]}]})
    start = time.monotonic()
    body = client.request(request)
    took = time.monotonic() - start
    (partition,) = body.responses[0].partitions
    assert partition.error_code is ErrorCode.none
    return took, len(partition.records or b""), partition.high_watermark


def test_a_fetch_on_an_older_segment_does_not_wait_for_min_bytes(broker) -> None:  # type: ignore[no-untyped-def]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1, config={"segment.bytes": "200"})])[TOPIC].result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(BATCHES):  # one batch per flush: a segment holds one or two of them
        producer.produce(TOPIC, key=b"k%02d" % i, value=b"v%02d" % i, partition=0)
        assert producer.flush(30) == 0
    segments = sorted((broker.data_dir / f"{TOPIC}-0").glob("*.log"))
    assert len(segments) > 3
    with RawClient(broker.bootstrap) as client:
        for offset in (0, BATCHES // 2):
            took, size, hw = fetch(client, offset, max_wait_ms=10_000)
            assert hw == BATCHES
            assert 0 < size < 200  # one segment's batches, far below min_bytes
            assert took < 5, f"a fetch at {offset} waited {took:.1f} s for min_bytes"
        # Caught up: nothing to read, so the long poll waits out max_wait as before.
        took, size, _ = fetch(client, BATCHES, max_wait_ms=1_000)
        assert size == 0 and took >= 0.9
