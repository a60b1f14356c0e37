"""The broker's own CPU per request and per GB on the produce and fetch paths, with a client that
costs next to nothing: pre-built Produce frames (idempotent, one batch of 1 KiB records per
request, sequences patched in place) and Fetch frames sent over a raw socket, five in flight, while
the broker's CPU time is read from /proc. On a shared machine the broker's CPU seconds move far
less than its wall-clock speed, so this is the instrument for one optimisation at a time:

    python -m bench.micro --batch-kb 16 --mb 300 [--isolation 1] [--py-spy out.txt]
    python -m bench.micro --batch-kb 64 --produce-version 13 --transactional 160  # k2-txn's requests
    python -m bench.micro --batch-kb 1 --mb 40 --fetch-kb 1 --fetch-passes 3 --fetch-version 17  # per-fetch cost
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

from crc32c import crc32c

from broker.embedded import EmbeddedBroker, recv_exact, request
from protocol.codec import encode_request
from protocol.records import Record, build_batch

_TICKS = os.sysconf("SC_CLK_TCK")
_IN_FLIGHT = 5


def _cpu_s(pid: int) -> float:
    user, system = _cpu_split(pid)
    return user + system


def _stat(pid: int) -> list[str]:
    """/proc/<pid>/stat's fields after the command name (state first)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rpartition(")")[2].split()


def _cpu_split(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of the process so far."""
    fields = _stat(pid)
    return int(fields[11]) / _TICKS, int(fields[12]) / _TICKS


def _minor_faults(pid: int) -> int:
    """Page faults served without I/O: on a VM each costs microseconds, so fresh memory per request shows."""
    return int(_stat(pid)[7])


def producer_id(bootstrap: str, transactional_id: str | None = None) -> tuple[int, int]:
    from kio.schema.init_producer_id.v5.request import InitProducerIdRequest

    from protocol.build import build
    r = request(bootstrap, build(InitProducerIdRequest, {"transactional_id": transactional_id,
                                                         "transaction_timeout": 60000,
                                                         "producer_id": -1, "producer_epoch": -1}))
    return r.producer_id, r.producer_epoch


def _topic_id(bootstrap: str, topic: str) -> Any:
    from kio.schema.metadata.v12.request import MetadataRequest

    from protocol.build import build
    r = request(bootstrap, build(MetadataRequest, {"topics": [{"topic_id": None, "name": topic}],
                                                   "allow_auto_topic_creation": False,
                                                   "include_topic_authorized_operations": False}))
    return r.topics[0].topic_id


def _produce_frame(topic: str | Any, version: int, batch_kb: int, txn: str | None, pid: int,
                   epoch: int, partition: int = 0) -> tuple[bytearray, int, int]:
    """One Produce request (v9 names the topic, v13 gives its id) and where its batch lies."""
    from kio.schema.produce.v9.request import ProduceRequest as V9
    from kio.schema.produce.v13.request import ProduceRequest as V13

    from protocol.build import build
    value = b"x" * 1000
    batch = bytes(build_batch([Record(offset=i, timestamp=int(time.time() * 1000), key=None, value=value,
                                      headers=()) for i in range(batch_kb)],
                              producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=txn is not None))
    named = {"topic_id": topic} if version >= 13 else {"name": topic}
    frame = bytearray(encode_request(build(V13 if version >= 13 else V9, {
        "transactional_id": txn, "acks": -1, "timeout": 30000,
        "topic_data": [{**named, "partition_data": [{"index": partition, "records": batch}]}]}), 1, "micro"))
    at = frame.index(batch)
    return frame, at, at + len(batch)


def produce_frames(topic: str | Any, version: int, batch_kb: int, count: int, pid: int, epoch: int,
                   txn: str | None = None, partition: int = 0) -> Any:
    """count Produce frames with consecutive sequences (patched in place, CRC recomputed)."""
    frame, at, end = _produce_frame(topic, version, batch_kb, txn, pid, epoch, partition)
    for i in range(count):
        struct.pack_into(">i", frame, at + 53, i * batch_kb)  # base_sequence
        struct.pack_into(">I", frame, at + 17, crc32c(memoryview(frame)[at + 21:end]))
        struct.pack_into(">i", frame, 8, i)  # correlation id
        yield bytes(frame)


def _end_txn(sock: socket.socket, txn: str, pid: int, epoch: int) -> int:
    """Commit (EndTxn v5, Transactions V2); the epoch the coordinator bumped to."""
    from kio.schema.end_txn.v5.request import EndTxnRequest
    from kio.schema.end_txn.v5.response import EndTxnResponse

    from protocol.build import build
    from protocol.codec import _reader
    sock.sendall(encode_request(build(EndTxnRequest, {"transactional_id": txn, "producer_id": pid,
                                                      "producer_epoch": epoch, "committed": True}), 0, "micro"))
    body = _response(sock)
    _, pos = _reader(EndTxnResponse.__header_schema__)(body, 0)
    resp, _ = _reader(EndTxnResponse)(body, pos)
    if resp.error_code:
        raise SystemExit(f"EndTxn failed: {resp.error_code}")
    return int(resp.producer_epoch)


def _produce_transactions(sock: socket.socket, topic: str | Any, version: int, batch_kb: int, count: int,
                          pid: int, epoch: int, per_txn: int) -> None:
    """Transactions V2 as Kafka's producer runs them: per_txn pipelined requests, then EndTxn,
    the next transaction under the bumped epoch from sequence 0."""
    txn = "micro-txn"
    done = 0
    while done < count:
        n = min(per_txn, count - done)
        check_produced(pipeline(sock, produce_frames(topic, version, batch_kb, n, pid, epoch, txn)), version)
        epoch = _end_txn(sock, txn, pid, epoch)
        done += n


def check_produced(responses: list[bytes], version: int) -> None:
    """The first and last answers of a transaction carry no error."""
    from protocol.codec import _reader, response_schema
    schema = response_schema(0, version)
    for body in responses[:1] + responses[-1:]:
        _, pos = _reader(schema.__header_schema__)(body, 0)
        resp, _ = _reader(schema)(body, pos)
        code = resp.responses[0].partition_responses[0].error_code
        if code:
            raise SystemExit(f"produce failed: error {code}")


def _fetch_frames(topic: str | Any, isolation: int, offsets: Any, version: int = 12, max_kb: int = 1024,
                  max_wait: int = 500) -> Any:
    """Fetch requests, one per offset: v12 names the topic, v13+ give its id."""
    from protocol.build import build
    from protocol.codec import request_schema
    named = {"topic_id": topic} if version >= 13 else {"topic": topic}
    for i, offset in enumerate(offsets):
        yield encode_request(build(request_schema(1, version), {
            "replica_id": -1, "max_wait": max_wait, "min_bytes": 1, "max_bytes": 50 << 20, "isolation_level": isolation,
            "session_id": 0, "session_epoch": -1,
            "topics": [{**named, "partitions": [{
                "partition": 0, "fetch_offset": offset, "current_leader_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": max_kb << 10}]}]}),
            i, "micro")


def pipeline(sock: socket.socket, frames: Any) -> list[bytes]:
    pending: deque[int] = deque()
    out = []
    for frame in frames:
        sock.sendall(frame)
        pending.append(1)
        if len(pending) >= _IN_FLIGHT:
            pending.popleft()
            out.append(_response(sock))
    while pending:
        pending.popleft()
        out.append(_response(sock))
    return out


def _response(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", recv_exact(sock, 4))
    return recv_exact(sock, size)


def _fetch_all(sock: socket.socket, topic: str | Any, isolation: int, end: int, version: int = 12,
               max_kb: int = 1024) -> tuple[int, int]:
    """Fetch from offset 0 to end, one request at a time (the next offset comes from the last
    response's last batch). Returns (requests, bytes)."""
    offset, requests, total = 0, 0, 0
    while offset < end:
        sock.sendall(next(_fetch_frames(topic, isolation, [offset], version, max_kb)))
        body = _response(sock)
        requests += 1
        records = _records_of(body, version)
        total += len(records)
        if not records:
            raise SystemExit(f"fetch at offset {offset} of {end} returned nothing")
        offset = _next_offset(records)
    return requests, total


def _empty_fetches(sock: socket.socket, topic: str | Any, isolation: int, end: int, version: int, n: int,
                   pid: int) -> None:
    frames = list(_fetch_frames(topic, isolation, [end] * n, version, max_wait=0))
    c0, t0 = _cpu_s(pid), time.perf_counter()
    for frame in frames:
        sock.sendall(frame)
        _response(sock)
    c1, t1 = _cpu_s(pid), time.perf_counter()
    print(f"empty:   {n} fetches at the log end, max_wait 0: broker CPU {1e6 * (c1 - c0) / n:.0f} us/request, "
          f"round trip {1e6 * (t1 - t0) / n:.0f} us")


def _records_of(body: bytes, version: int = 12) -> bytes:
    from protocol.codec import _reader, response_schema
    schema = response_schema(1, version)
    _, pos = _reader(schema.__header_schema__)(body, 0)
    resp, _ = _reader(schema)(body, pos)
    return resp.responses[0].partitions[0].records or b""


def _next_offset(records: bytes) -> int:
    pos, last = 0, 0
    while pos + 12 <= len(records):
        base, length = struct.unpack_from(">qi", records, pos)
        (delta,) = struct.unpack_from(">i", records, pos + 23)
        last = base + delta + 1
        pos += 12 + length
    return last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-kb", type=int, default=16)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--isolation", type=int, default=0)
    parser.add_argument("--py-spy", help="write py-spy's raw stacks of the broker here")
    parser.add_argument("--fetch-passes", type=int, default=1, help="fetch the topic this many times")
    parser.add_argument("--fetch-version", type=int, default=12, choices=range(4, 19), metavar="4-18",
                        help="Fetch v12 names the topic; v13+ (Kafka 4 clients) give its id")
    parser.add_argument("--fetch-kb", type=int, default=1024,
                        help="partition_max_bytes of each fetch, KiB (small: the per-request cost dominates)")
    parser.add_argument("--produce-version", type=int, default=9, choices=(9, 13),
                        help="Produce v9 names the topic; v13 (Kafka 4 clients) gives its id")
    parser.add_argument("--empty-fetches", type=int, default=0, metavar="N",
                        help="then N fetches at the log end with max_wait 0, one at a time: what a consumer "
                             "with fetch.max.wait.ms=0 (Kafka's EndToEndLatency) costs the broker while idle")
    parser.add_argument("--transactional", type=int, default=0, metavar="N",
                        help="produce in transactions (V2) of N requests each, committed by EndTxn v5")
    args = parser.parse_args()
    with EmbeddedBroker() as b:
        assert b.proc is not None
        pid = b.proc.pid
        b.create_topic("micro", 1)
        txn = "micro-txn" if args.transactional else None
        producer, epoch = producer_id(b.bootstrap_servers, txn)
        topic_id = _topic_id(b.bootstrap_servers, "micro")
        topic = topic_id if args.produce_version >= 13 else "micro"
        fetched_topic = topic_id if args.fetch_version >= 13 else "micro"
        count = args.mb * 1024 // args.batch_kb
        spy = None
        if args.py_spy:
            spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--format", "raw",
                                    "--rate", "200", "--nonblocking", "-o", args.py_spy, "-p", str(pid)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
        with socket.create_connection(("127.0.0.1", int(b.bootstrap_servers.rsplit(":", 1)[1]))) as sock:
            c0, t0, u0, f0 = _cpu_s(pid), time.perf_counter(), _cpu_split(pid), _minor_faults(pid)
            if args.transactional:
                _produce_transactions(sock, topic, args.produce_version, args.batch_kb, count, producer,
                                      epoch, args.transactional)
            else:
                check_produced(pipeline(sock, produce_frames(topic, args.produce_version, args.batch_kb, count,
                                                       producer, epoch)), args.produce_version)
            c1, t1, u1, f1 = _cpu_s(pid), time.perf_counter(), _cpu_split(pid), _minor_faults(pid)
            requests = fetched = 0
            for _ in range(args.fetch_passes):
                r, f = _fetch_all(sock, fetched_topic, args.isolation, count * args.batch_kb, args.fetch_version,
                                  args.fetch_kb)
                requests, fetched = requests + r, fetched + f
            c2, t2, u2, f2 = _cpu_s(pid), time.perf_counter(), _cpu_split(pid), _minor_faults(pid)
            if args.empty_fetches:
                _empty_fetches(sock, fetched_topic, args.isolation, count * args.batch_kb, args.fetch_version,
                               args.empty_fetches, pid)
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait()
        gb = count * args.batch_kb * 1024 / 1e9
        load = os.getloadavg()[0]
        print(f"produce: {count} requests of {args.batch_kb} KiB, broker CPU {c1 - c0:.2f} s = "
              f"{(c1 - c0) / gb:.2f} s/GB, {1e6 * (c1 - c0) / count:.0f} us/request (user {u1[0] - u0[0]:.2f} s, "
              f"system {u1[1] - u0[1]:.2f} s), {(f1 - f0) / count:.1f} page faults/request, wall {t1 - t0:.1f} s, "
              f"load {load:.1f}")
        if not requests:
            return
        print(f"fetch:   {requests} requests, {fetched / 1e6:.0f} MB, broker CPU {c2 - c1:.2f} s = "
              f"{(c2 - c1) / (fetched / 1e9):.2f} s/GB, {1e6 * (c2 - c1) / requests:.0f} us/request (user "
              f"{u2[0] - u1[0]:.2f} s, system {u2[1] - u1[1]:.2f} s), "
              f"{(f2 - f1) / max(requests, 1):.1f} page faults/request, wall {t2 - t1:.1f} s")


if __name__ == "__main__":
    main()
