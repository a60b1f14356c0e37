"""Failover time: kill -9 the leader of a partition under a steady idempotent acks=all load and
time from the kill to the first acknowledgement, which only its successor can give.

Params: topic, partitions, pids (node id -> broker pid, from bench/cluster.py), rate (records/s).
"""

from __future__ import annotations

import os
import signal
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from bench.load.common import Meter, base_config, create_topics, emit, fail, mark, payload

TIMEOUT_S = 120.0


def leader_of(bootstrap: str, topic: str, partition: int) -> int:
    meta = AdminClient(base_config(bootstrap)).list_topics(topic, timeout=10)
    return meta.topics[topic].partitions[partition].leader


def run(bootstrap: str, params: dict) -> None:
    topic, pids = params["topic"], params["pids"]
    create_topics(bootstrap, {topic: params["partitions"]})
    producer = Producer(base_config(bootstrap, acks="all", **{"enable.idempotence": True,
                                                              "linger.ms": 0,
                                                              "message.timeout.ms": int(TIMEOUT_S * 1000)}))
    value = payload()
    for _ in range(100):
        producer.produce(topic, value, partition=0)
    if producer.flush(30) != 0:
        fail("warm-up records were not acknowledged")
    victim = leader_of(bootstrap, topic, 0)
    acked_after: list[float] = []
    errors: list[object] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(err)
        elif not acked_after:
            acked_after.append(time.perf_counter())

    meter = Meter()
    mark("start")
    killed_at = time.perf_counter()
    os.kill(pids[str(victim)], signal.SIGKILL)
    interval = 1 / params.get("rate", 100)
    while not acked_after and time.perf_counter() - killed_at < TIMEOUT_S:
        producer.produce(topic, value, partition=0, on_delivery=delivered)
        producer.poll(interval)
    if producer.flush(TIMEOUT_S) != 0 or errors or not acked_after:
        fail(f"after killing node {victim}: acked={bool(acked_after)}, errors={errors[:3]}")
    emit({"failover s": acked_after[0] - killed_at}, meter, victim=victim)
