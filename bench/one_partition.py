"""One idempotent producer's Produce requests to ONE partition of one broker over PostgreSQL and an
object store (versitygw), IN_FLIGHT of them on the connection at a time as librdkafka keeps (5 by
default): requests/s and MB/s. Each request is one batch of 16 records of 1 KiB. The case of a
partition with several flushes in flight (storage/pg/in_flight.py). A raw connection, not a
client library: on a loaded machine librdkafka's own pace (it filled a batch about as fast as one
came back) hid what the broker does with a full window.
Usage: python -m bench.one_partition [REQUESTS] [IN_FLIGHT] [ROUNDS]"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from bench.cluster import start_cluster
from bench.load.common import create_topics
from protocol.api_keys import ApiKey
from tests.e2e.cluster.test_failover import batch
from tests.e2e.objects.test_pipelined_produce import produce
from tests.e2e.test_pipelining import send_all
from tests.kafka_wire import RawClient, decode_response, recv_frame

RECORDS_PER_BATCH = 16
VALUE = os.urandom(1024)


def one_round(bootstrap: str, topic: str, count: int, in_flight: int) -> float:
    """Requests/s of count requests, a new one sent as each answer comes."""
    create_topics(bootstrap, {topic: 1})
    requests = [produce(topic, 0, batch(*[VALUE] * RECORDS_PER_BATCH, producer_id=4242,
                                        base_sequence=RECORDS_PER_BATCH * i)) for i in range(count)]
    with RawClient(bootstrap, timeout=60) as client:
        start = time.monotonic()
        send_all(client.sock, requests[:in_flight])
        for answered in range(count):
            _, body = decode_response(recv_frame(client.sock), ApiKey.PRODUCE, 8)
            code = body.responses[0].partition_responses[0].error_code
            if code != 0:
                raise RuntimeError(f"request {answered + 1} answered error {code}")
            if (following := answered + in_flight) < count:
                send_all(client.sock, [requests[following]], following + 1)
        return count / (time.monotonic() - start)


def main(count: int, in_flight: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cluster = start_cluster(Path(tmp), 1, "os1", store="versitygw")
        try:
            figures = [one_round(cluster.bootstrap, f"one-{i}", count, in_flight) for i in range(rounds)]
        finally:
            cluster.stop()
    mb = RECORDS_PER_BATCH * len(VALUE) / 1e6
    shown = ", ".join(f"{f:.0f} ({f * mb:.2f} MB/s)" for f in figures)
    print(f"1 partition, {in_flight} in flight, {count} requests of {RECORDS_PER_BATCH} x 1 KiB: {shown} "
          f"requests/s (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*(args + [600, 5, 2][len(args):]))
