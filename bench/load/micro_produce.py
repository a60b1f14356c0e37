"""m1-produce (issue 34): a load cheap enough that the broker is the limit, from several connections.

Each connection is one idempotent producer writing one partition: pre-built Produce requests
(bench.micro's: v9, one batch of 1 KiB records per request, sequences patched in place, five in
flight) sent over a raw socket to the partition's leader as Metadata names it, so every process
of a multi-process broker gets its share. Threads carry the connections (they wait in socket
calls, which release the GIL); the client's work per request is a CRC and a send.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter

from confluent_kafka.admin import AdminClient

from bench.load.common import SETUP_TIMEOUT_S, base_config, create_topics, emit, fail, run_timed
from bench.micro import check_produced, pipeline, produce_frames, producer_id

PRODUCE_VERSION = 9  # names the topic (bench.micro's default)


def leaders(bootstrap: str, topic: str) -> dict[int, tuple[str, int]]:
    """partition -> (host, port) of its leader, from Metadata (asked again while a broker it
    reaches does not know every leader yet: several processes learn a new topic one by one)."""
    admin = AdminClient(base_config(bootstrap))
    deadline = time.monotonic() + SETUP_TIMEOUT_S
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic, timeout=30)
        brokers = {b.id: (b.host, b.port) for b in meta.brokers.values()}
        found = {p.id: brokers.get(p.leader) for p in meta.topics[topic].partitions.values()}
        if all(found.values()):
            return {p: address for p, address in found.items() if address is not None}
        time.sleep(0.05)  # polling Metadata, not synchronising on time
    raise TimeoutError(f"{topic}: not every partition has a leader in Metadata")


def _connection(address: tuple[str, int]) -> tuple[socket.socket, int, int]:
    """A connection to a leader and a producer id of its own."""
    pid, epoch = producer_id(f"{address[0]}:{address[1]}")
    sock = socket.create_connection(address)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock, pid, epoch


def _send(sock: socket.socket, frames: object, errors: list[str]) -> None:
    try:
        check_produced(pipeline(sock, frames), PRODUCE_VERSION)
    except (OSError, SystemExit) as exc:  # check_produced ends with SystemExit on an error code
        errors.append(str(exc))


def run(bootstrap: str, params: dict) -> None:
    """params: topic, partitions, mb (total, spread evenly), batch_kb."""
    topic, partitions, batch_kb = params["topic"], params["partitions"], params["batch_kb"]
    create_topics(bootstrap, {topic: partitions})
    where = leaders(bootstrap, topic)
    per_partition = max(1, params["mb"] * 1024 // batch_kb // partitions)
    conns = {p: _connection(where[p]) for p in range(partitions)}
    errors: list[str] = []
    threads = []
    for p, (sock, pid, epoch) in conns.items():
        frames = produce_frames(topic, PRODUCE_VERSION, batch_kb, per_partition, pid, epoch, partition=p)
        threads.append(threading.Thread(target=_send, args=(sock, frames, errors), daemon=True))
    meter = run_timed(threads)
    for sock, _, _ in conns.values():
        sock.close()
    if errors:
        fail(f"m1-produce: {len(errors)} connection(s) failed, first: {errors[0]}")
    wall, _ = meter.read()
    moved = per_partition * partitions * batch_kb * 1024
    per_leader = Counter(f"{host}:{port}" for host, port in where.values())
    emit({"MB/s": moved / wall / 1e6, "records/s": per_partition * partitions * batch_kb / wall}, meter,
         bytes=moved, requests=per_partition * partitions, connections=partitions,
         connections_per_leader=dict(per_leader))

