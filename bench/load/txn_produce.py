"""Workload 2: transactional produce of 1 KiB records.

Params: topic, partitions, records, and either commit_ms (commit when that much
time has passed since the transaction began) or commit_records. Figures: MB/s,
transactions/s.
"""

from __future__ import annotations

import time

from confluent_kafka import Producer

from bench.load.common import (
    DeliveryCounter,
    base_config,
    create_topics,
    emit,
    mb_per_s,
    timed_produce,
)

TXN_TIMEOUT_S = 60


def transactional_producer(bootstrap: str, txn_id: str, **extra: object) -> Producer:
    settings: dict[str, object] = {"transactional.id": txn_id, "acks": "all", "linger.ms": 5,
                                   "compression.type": "none"}
    settings.update(extra)
    producer = Producer(base_config(bootstrap, **settings))
    producer.init_transactions(TXN_TIMEOUT_S)
    return producer


def should_commit(params: dict, in_txn: int, began: float) -> bool:
    if "commit_records" in params:
        return in_txn >= params["commit_records"]
    return (time.perf_counter() - began) * 1000 >= params["commit_ms"]


def produce_txns(producer: Producer, params: dict, value: bytes, counter: DeliveryCounter) -> int:
    topic, records = params["topic"], params["records"]
    txns, in_txn, sent = 0, 0, 0
    producer.begin_transaction()
    began = time.perf_counter()
    while sent < records:
        try:
            producer.produce(topic, value, on_delivery=counter)
        except BufferError:
            producer.poll(0.01)  # local queue full: serve callbacks, then retry
            continue
        sent += 1
        in_txn += 1
        producer.poll(0)
        if sent == records or should_commit(params, in_txn, began):
            producer.commit_transaction(TXN_TIMEOUT_S)
            txns += 1
            in_txn = 0
            if sent < records:
                producer.begin_transaction()
                began = time.perf_counter()
    return txns


def run(bootstrap: str, params: dict) -> None:
    create_topics(bootstrap, {params["topic"]: params["partitions"]})
    producer = transactional_producer(bootstrap, params["topic"] + "-txn")
    records = params["records"]
    txns, wall, meter = timed_produce(
        records, lambda value, counter: produce_txns(producer, params, value, counter))
    emit({"MB/s": mb_per_s(records, wall), "txns/s": txns / wall}, meter, txns=txns)
