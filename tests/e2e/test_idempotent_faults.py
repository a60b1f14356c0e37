"""An idempotent producer whose connections are cut after the broker wrote a batch but before the
client saw the answer: retries must be deduplicated (no duplicates) and nothing lost."""

from __future__ import annotations

from collections import defaultdict

import pytest
from confluent_kafka import Producer

from tests.e2e.fault_proxy import FaultProxy
from tests.e2e.txn_clients import confluent_read, create_topics

pytestmark = pytest.mark.e2e

PRODUCE = 0
MESSAGES = 3000


def test_retries_after_lost_produce_responses_are_deduplicated(broker_factory):
    proxy = FaultProxy(drop=lambda api_key, n: api_key == PRODUCE and n % 9 == 0)
    b = broker_factory({"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"})
    proxy.start(b.port)
    try:
        bs = f"127.0.0.1:{proxy.port}"
        create_topics(bs, ["dedup"], 3)
        p = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "linger.ms": 2,
                      "batch.num.messages": 50, "retry.backoff.ms": 10})
        errors = []

        def delivered(err, msg):  # type: ignore[no-untyped-def]
            if err is not None:
                errors.append(err)

        for i in range(MESSAGES):
            p.produce("dedup", key=str(i % 7).encode(), value=str(i).encode(), on_delivery=delivered)
            p.poll(0)
        assert p.flush(60) == 0
        assert errors == []
        assert proxy.cuts >= 3
        rows = confluent_read(bs, {"dedup": 3}, "read_uncommitted", MESSAGES)
    finally:
        proxy.close()
    values = [int(r[3]) for r in rows]
    assert len(values) == len(set(values)) == MESSAGES
    by_key = defaultdict(list)
    for *_, value in sorted(rows, key=lambda r: (r[1], r[2])):
        by_key[int(value) % 7].append(int(value))
    assert all(v == sorted(v) for v in by_key.values())  # per-key order survives the retries
