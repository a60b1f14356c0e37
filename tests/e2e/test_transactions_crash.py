"""kill -9 of the broker in the middle of a stream of transactions (issue 4's recovery test)."""

from __future__ import annotations

import threading
from collections import defaultdict

import pytest
from confluent_kafka import KafkaException

from broker.dispatch import HANDLERS
from protocol.api_keys import ApiKey
from tests.e2e.txn_clients import confluent_read, create_topics, kafka_python_read, txn_producer

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(ApiKey.FIND_COORDINATOR not in HANDLERS,
                       reason="transactional clients need FindCoordinator (group coordinator work)"),
]

RECORDS_PER_TXN = 5
TRANSACTIONS = 60


def _commit_one(producer, n: int) -> bool:  # type: ignore[no-untyped-def]
    """Produce and commit transaction n; True only if the broker acknowledged the commit."""
    producer.begin_transaction()
    for i in range(RECORDS_PER_TXN):
        producer.produce("stream", value=f"txn{n}-{i}".encode(), key=str(i).encode())
    while True:
        try:
            producer.commit_transaction(30)
            return True
        except KafkaException as exc:
            err = exc.args[0]
            if err.retriable():
                continue
            if err.txn_requires_abort():
                producer.abort_transaction(30)
                return False
            raise


def test_no_acknowledged_transaction_is_lost_and_none_is_partly_visible(broker_factory):
    b = broker_factory({"transaction.state.log.num.partitions": "3", "log.segment.bytes": "4096"})
    bs = b.bootstrap
    create_topics(bs, ["stream"], 3)
    acknowledged: list[int] = []
    crashed = threading.Event()

    def crash_and_restart() -> None:
        b.restart(kill=True)
        crashed.set()

    producer = txn_producer(bs, "stream-1")
    killer = None
    for n in range(TRANSACTIONS):
        if n == TRANSACTIONS // 3:  # kill while the next transactions are in flight
            killer = threading.Thread(target=crash_and_restart)
            killer.start()
        try:
            if _commit_one(producer, n):
                acknowledged.append(n)
        except KafkaException as exc:
            assert exc.args[0].fatal(), exc
            producer = txn_producer(bs, "stream-1")  # a fatal error: start over, as apps do
    assert killer is not None
    killer.join(60)
    assert crashed.is_set() and b.logged("unclean shutdown")

    rows = confluent_read(bs, {"stream": 3}, "read_committed", len(acknowledged) * RECORDS_PER_TXN)
    seen: dict[int, list[str]] = defaultdict(list)
    for _, _, _, value in rows:
        txn, _, rec = value.decode().partition("-")
        seen[int(txn[3:])].append(rec)
    partial = {n: recs for n, recs in seen.items() if sorted(recs) != [str(i) for i in range(RECORDS_PER_TXN)]}
    assert partial == {}, "transactions partly visible or duplicated"
    assert set(acknowledged) <= set(seen), f"acknowledged but lost: {set(acknowledged) - set(seen)}"
    assert len(acknowledged) > TRANSACTIONS // 2
    assert sorted(r[3] for r in kafka_python_read(bs, {"stream": 3}, len(rows))) == sorted(r[3] for r in rows)
