"""Workload 4: consume-transform-produce with send_offsets_to_transaction.

Set-up (untimed) writes `records` 1 KiB records to the input topic and lets the
consumer join its group. Timed, from the first batch received: read up to
`batch_records` (read_committed), write each value reversed to the output topic
and commit the consumed offsets in the same transaction, until every input
record has been processed. Figures: transactions/s, records/s.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer

from bench.load.common import (
    DeliveryCounter,
    Meter,
    base_config,
    create_topics,
    emit,
    fail,
    mark,
    payload,
)
from bench.load.produce import PRODUCER_SETTINGS, produce_all
from bench.load.txn_produce import TXN_TIMEOUT_S, transactional_producer

STALL_S = 30.0


def fill_input(bootstrap: str, topic: str, records: int) -> None:
    producer = Producer(base_config(bootstrap, **PRODUCER_SETTINGS))
    counter = DeliveryCounter()
    produce_all(producer, topic, records, payload(), counter)
    counter.require(records, "input: ")


def group_consumer(bootstrap: str, params: dict) -> Consumer:
    consumer = Consumer(base_config(bootstrap, **{
        "group.id": params["input"] + "-ctp", "isolation.level": "read_committed",
        "enable.auto.commit": False, "auto.offset.reset": "earliest"}))
    consumer.subscribe([params["input"]])
    return consumer


def process_batch(consumer: Consumer, producer: Producer, output: str, batch: list) -> None:
    producer.begin_transaction()
    for msg in batch:
        if msg.error() is not None:
            fail(f"consumer error: {msg.error()}")
        producer.produce(output, msg.value()[::-1], key=msg.key())
    producer.send_offsets_to_transaction(
        consumer.position(consumer.assignment()), consumer.consumer_group_metadata(),
        TXN_TIMEOUT_S)
    producer.commit_transaction(TXN_TIMEOUT_S)


def loop(consumer: Consumer, producer: Producer, params: dict) -> tuple[Meter, int]:
    meter, done, txns, last = None, 0, 0, time.monotonic()
    while done < params["records"]:
        # consume() waits for num_messages or the timeout: ask for no more than remain.
        want = min(params["batch_records"], params["records"] - done)
        batch = consumer.consume(num_messages=want, timeout=1.0)
        if not batch:
            if time.monotonic() - last > STALL_S:
                fail(f"no progress for {STALL_S:.0f} s at {done}/{params['records']}")
            continue
        if meter is None:
            mark("start")
            meter = Meter()
        process_batch(consumer, producer, params["output"], batch)
        done += len(batch)
        txns += 1
        last = time.monotonic()
    assert meter is not None
    return meter, txns


def run(bootstrap: str, params: dict) -> None:
    partitions = params["partitions"]
    create_topics(bootstrap, {params["input"]: partitions, params["output"]: partitions})
    fill_input(bootstrap, params["input"], params["records"])
    producer = transactional_producer(bootstrap, params["input"] + "-ctp-txn")
    consumer = group_consumer(bootstrap, params)
    meter, txns = loop(consumer, producer, params)
    wall, _ = meter.read()
    records = params["records"]
    emit({"txns/s": txns / wall, "records/s": records / wall}, meter, txns=txns)
    consumer.close()
