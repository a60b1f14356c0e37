"""Scale workloads (issue 15): many partitions, many producers, a large group, many connections.

- many_producers: `producers` idempotent producers (acks=all, linger 5 ms) spread over `processes`
  processes write `records` 1 KiB records in all, round-robin over a topic of `partitions`
  partitions. Figures: MB/s from the first record to the last acknowledgement, and the p99 of
  produce-to-acknowledgement latency over every record.
- big_group: `members` consumers join one group over a topic of `partitions` partitions.
  Figure: seconds from the first subscribe until every partition is owned exactly once.
- connections: `connections` sockets each send ApiVersions every `interval_s` seconds for
  `seconds`. Figures: p99 request latency and the broker's RSS while they are all open.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import struct
import time

from confluent_kafka import Consumer, Producer

from bench.load.common import Meter, base_config, create_topics, emit, fail, mark, mb_per_s, payload, percentile
from bench.load.produce import PRODUCER_SETTINGS

SETTLE_LIMIT_S = 300.0


def _produce_share(bootstrap: str, topic: str, partitions: int, producers: int, records: int, offset: int,
                   start: float, out: multiprocessing.Queue) -> None:
    clients = [Producer(base_config(bootstrap, **PRODUCER_SETTINGS)) for _ in range(producers)]
    value = payload()
    latencies: list[float] = []
    errors: list[str] = []

    def delivered(sent: float):  # noqa: ANN202 - a closure per record carries its send time
        def cb(err: object, _msg: object) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                latencies.append(time.perf_counter() - sent)
        return cb

    while time.time() < start:  # every process starts together
        time.sleep(0.001)
    for i in range(records):
        client = clients[i % producers]
        while True:
            try:
                client.produce(topic, value, partition=(offset + i) % partitions,
                               on_delivery=delivered(time.perf_counter()))
                break
            except BufferError:
                client.poll(0.01)
        client.poll(0)
    for client in clients:
        client.flush(300)
    out.put((latencies, errors[:3]))


def many_producers(bootstrap: str, params: dict) -> None:
    topic, partitions, records = params["topic"], params["partitions"], params["records"]
    producers, processes = params["producers"], params["processes"]
    create_topics(bootstrap, {topic: partitions})
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start = time.time() + 5  # time for the processes to start and connect
    share = records // processes
    procs = [ctx.Process(target=_produce_share, args=(bootstrap, topic, partitions, producers // processes, share,
                                                       n * (partitions // processes), start, out))
             for n in range(processes)]
    for p in procs:
        p.start()
    while time.time() < start:
        time.sleep(0.001)
    mark("start")
    meter = Meter()
    results = [out.get(timeout=900) for _ in procs]
    wall = time.time() - start
    for p in procs:
        p.join()
    latencies = [v for lat, _ in results for v in lat]
    errors = [e for _, errs in results for e in errs]
    if errors or len(latencies) != share * processes:
        fail(f"acked {len(latencies)}/{share * processes}, errors {errors}")
    emit({"MB/s": mb_per_s(len(latencies), wall), "p99 ms": percentile(latencies, 99) * 1000}, meter,
         bytes=len(latencies) * 1024)


def big_group(bootstrap: str, params: dict) -> None:
    topic, partitions, members = params["topic"], params["partitions"], params["members"]
    create_topics(bootstrap, {topic: partitions})
    mark("start")
    meter = Meter()
    t0 = time.perf_counter()
    consumers = []
    for _ in range(members):
        consumer = Consumer(base_config(bootstrap, **{"group.id": topic, "enable.auto.commit": False,
                                                      "auto.offset.reset": "latest",
                                                      "group.protocol": params.get("protocol", "classic")}))
        consumer.subscribe([topic])
        consumers.append(consumer)
    while time.perf_counter() - t0 < SETTLE_LIMIT_S:
        owned = []
        everyone = True  # with partitions >= members, a stable assignment leaves no member idle
        for consumer in consumers:
            consumer.poll(0)
            mine = consumer.assignment()
            everyone = everyone and bool(mine)
            owned.extend(tp.partition for tp in mine)
        if everyone and len(owned) == partitions and len(set(owned)) == partitions:
            break
        time.sleep(0.01)
    else:
        fail(f"{members} members did not own {partitions} partitions once each in {SETTLE_LIMIT_S:.0f} s")
    settled = time.perf_counter() - t0
    emit({"settle s": settled}, meter, members=members, partitions=partitions)
    for consumer in consumers:
        consumer.close()


_API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 0, 5) + b"scale"


async def _connection(host: str, port: int, interval: float, until: float, latencies: list[float]) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.perf_counter() < until:
            t0 = time.perf_counter()
            writer.write(struct.pack(">i", len(_API_VERSIONS_V0)) + _API_VERSIONS_V0)
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            await reader.readexactly(size)
            latencies.append(time.perf_counter() - t0)
            await asyncio.sleep(interval)
    finally:
        writer.close()


async def _connections(host: str, port: int, count: int, interval: float, seconds: float) -> list[float]:
    latencies: list[float] = []
    until = time.perf_counter() + seconds
    tasks = []
    for i in range(count):
        tasks.append(asyncio.create_task(_connection(host, port, interval, until, latencies)))
        if i % 100 == 99:
            await asyncio.sleep(0.05)  # open them at a steady pace, as clients would arrive
    await asyncio.gather(*tasks)
    return latencies


def connections(bootstrap: str, params: dict) -> None:
    import resource

    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, params["connections"] + 100)), hard))
    mark("start")
    meter = Meter()
    latencies = asyncio.run(_connections(host, int(port), params["connections"], params["interval_s"],
                                         params["seconds"]))
    emit({"p99 ms": percentile(latencies, 99) * 1000, "requests/s": len(latencies) / params["seconds"]}, meter,
         connections=params["connections"])


def fill_segments(bootstrap: str, params: dict) -> None:
    """Untimed set-up of the start-up case: `partitions` partitions of `segments` small segments
    each (segment.bytes 16 KiB, one 16 KiB batch per segment). The harness then restarts the broker
    cleanly and after kill -9 and times each start."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from bench.load.common import SETUP_TIMEOUT_S, wait_for_leaders

    topic, partitions = params["topic"], params["partitions"]
    admin = AdminClient(base_config(bootstrap))
    new = NewTopic(topic, num_partitions=partitions, replication_factor=1,
                   config={"segment.bytes": str(params["segment_bytes"])})
    admin.create_topics([new], operation_timeout=60)[topic].result(timeout=SETUP_TIMEOUT_S)
    wait_for_leaders(admin, {topic: partitions})
    producer = Producer(base_config(bootstrap, **{"acks": "all", "enable.idempotence": True, "linger.ms": 50,
                                                  "batch.size": params["segment_bytes"]}))
    value = payload()
    per_batch = max(1, params["segment_bytes"] // 1100)
    mark("start")
    meter = Meter()
    for p in range(partitions):
        for _ in range(params["segments"] * per_batch + 1):
            while True:
                try:
                    producer.produce(topic, value, partition=p)
                    break
                except BufferError:
                    producer.poll(0.01)
        producer.poll(0)
    if producer.flush(600) != 0:
        fail("fill: records left unacknowledged")
    records = partitions * (params["segments"] * per_batch + 1)
    emit({"fill MB/s": mb_per_s(records, meter.read()[0])}, meter, records=records)
