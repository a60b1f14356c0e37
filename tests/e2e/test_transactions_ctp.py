"""Consume-transform-produce with send_offsets_to_transaction: some batches are aborted and the
consumer rewinds to its committed offsets; the output must hold every input exactly once and the
group's committed offsets must match what was produced (KIP-98 / KIP-447 flow)."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as TP

from broker.dispatch import HANDLERS
from protocol.api_keys import ApiKey
from tests.e2e.txn_clients import WAIT_S, confluent_read, create_topics, plain_producer, txn_producer

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not {ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.OFFSET_FETCH} <= set(HANDLERS),
                       reason="needs the group coordinator's APIs"),
]

INPUTS = 300


def _rewind(consumer: Consumer) -> None:
    """After an abort: back to the last committed offsets (the standard EOS recovery)."""
    for tp in consumer.committed(consumer.assignment(), timeout=WAIT_S):
        consumer.seek(TP(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))


# KIP-848: the same loop with the consumer group protocol, where TxnOffsetCommit carries the
# member epoch in its generation field.
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_consume_transform_produce_is_exactly_once_with_aborts(broker_factory, protocol):
    b = broker_factory({"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3",
                        "group.initial.rebalance.delay.ms": "0"})
    bs = b.bootstrap
    create_topics(bs, ["in", "out"], 3)
    source = plain_producer(bs)
    for i in range(INPUTS):
        source.produce("in", key=str(i).encode(), value=f"v{i}".encode())
    source.flush(WAIT_S)

    consumer = Consumer({"bootstrap.servers": bs, "group.id": "ctp", "isolation.level": "read_committed",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", "group.protocol": protocol})
    consumer.subscribe(["in"])
    producer = txn_producer(bs, "ctp-1")
    batches = aborted = 0
    deadline = time.monotonic() + 2 * WAIT_S
    try:
        while time.monotonic() < deadline:
            msgs = [m for m in consumer.consume(num_messages=25, timeout=0.5) if not m.error()]
            if not msgs:
                committed = consumer.committed([TP("in", p) for p in range(3)], timeout=WAIT_S)
                if sum(max(tp.offset, 0) for tp in committed) == INPUTS:
                    break
                continue
            producer.begin_transaction()
            for m in msgs:
                producer.produce("out", key=m.key(), value=m.value().upper())
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), WAIT_S)
            batches += 1
            if batches % 3 == 0:
                producer.flush(WAIT_S)  # the aborted records really reach the log
                producer.abort_transaction(WAIT_S)
                aborted += 1
                _rewind(consumer)
            else:
                producer.commit_transaction(WAIT_S)
        committed = consumer.committed([TP("in", p) for p in range(3)], timeout=WAIT_S)
    finally:
        consumer.close()
    assert aborted >= 2
    assert b.logged("group ctp: now a consumer group") == (protocol == "consumer")
    assert sorted((tp.partition, tp.offset) for tp in committed) == sorted(
        (p, n) for p, n in Counter(r[1] for r in confluent_read(bs, {"in": 3}, "read_committed", INPUTS)).items())
    out = confluent_read(bs, {"out": 3}, "read_committed", INPUTS)
    assert sorted(r[3] for r in out) == sorted(f"V{i}".encode() for i in range(INPUTS))
    everything = confluent_read(bs, {"out": 3}, "read_uncommitted", INPUTS + 1)
    assert len(everything) > INPUTS  # aborted output exists in the log, and stays invisible
