"""Workload 8: rebalance time of a 3-member group, classic protocol or consumer protocol (KIP-848).

Set-up (untimed): a 6-partition topic and two members of a new group that have split it 3/3.
Timed: a third member joins, until the three own 2/2/2 (every partition owned once); then one
member leaves (from the start of its close()), until the two left own 3/3. Members keep librdkafka's defaults for their
protocol: classic uses the eager range/roundrobin assignors and a 3 s heartbeat, the consumer
protocol the broker's assignor (uniform) and heartbeat interval (group.consumer.heartbeat.interval.ms,
5 s on both brokers), so the figures are what an application sees out of the box.
Figures: seconds to settle after the join and after the leave.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer

from bench.load.common import Meter, base_config, create_topics, emit, fail, mark

PARTITIONS = 6
SETTLE_LIMIT_S = 120.0


def member(bootstrap: str, params: dict) -> Consumer:
    consumer = Consumer(base_config(bootstrap, **{
        "group.id": f"{params['topic']}-{params['protocol']}", "group.protocol": params["protocol"],
        "enable.auto.commit": False, "auto.offset.reset": "latest"}))
    consumer.subscribe([params["topic"]])
    return consumer


def settle(members: list[Consumer], share: int) -> float:
    """Poll every member until each owns `share` partitions and together all of them, once."""
    start = time.perf_counter()
    while time.perf_counter() - start < SETTLE_LIMIT_S:
        owned = []
        for consumer in members:
            consumer.poll(0.01)
            owned.append({tp.partition for tp in consumer.assignment()})
        if all(len(o) == share for o in owned) and len(set().union(*owned)) == PARTITIONS:
            return time.perf_counter() - start
    fail(f"{len(members)} members did not settle at {share} partitions each in {SETTLE_LIMIT_S:.0f} s")
    raise AssertionError("unreachable")


def run(bootstrap: str, params: dict) -> None:
    create_topics(bootstrap, {params["topic"]: PARTITIONS})
    members = [member(bootstrap, params), member(bootstrap, params)]
    settle(members, 3)
    mark("start")
    meter = Meter()
    members.append(member(bootstrap, params))
    joined = settle(members, 2)
    # From the moment the member starts leaving: close() sends LeaveGroup and waits for it, and
    # a broker that answers sooner must not start the clock later.
    leaving = time.perf_counter()
    members.pop(0).close()
    left = time.perf_counter() - leaving + settle(members, 3)
    emit({"join s": joined, "leave s": left}, meter, protocol=params["protocol"])
    for consumer in members:
        consumer.close()
