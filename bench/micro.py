"""The broker's own CPU per request and per GB on the produce and fetch paths, with a client that
costs next to nothing: pre-built Produce frames (idempotent, one batch of 1 KiB records per
request, sequences patched in place) and Fetch frames sent over a raw socket, five in flight, while
the broker's CPU time is read from /proc. On a shared machine the broker's CPU seconds move far
less than its wall-clock speed, so this is the instrument for one optimisation at a time:

    python -m bench.micro --batch-kb 16 --mb 300 [--isolation 1] [--py-spy out.txt]
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


def _cpu_split(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of the process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[11]) / _TICKS, int(fields[12]) / _TICKS


def _producer_id(bootstrap: str) -> tuple[int, int]:
    from kio.schema.init_producer_id.v4.request import InitProducerIdRequest

    from protocol.build import build
    r = request(bootstrap, build(InitProducerIdRequest, {"transactional_id": None, "transaction_timeout": 60000,
                                                         "producer_id": -1, "producer_epoch": -1}))
    return r.producer_id, r.producer_epoch


def _produce_frames(topic: str, batch_kb: int, count: int, pid: int, epoch: int) -> Any:
    from kio.schema.produce.v9.request import ProduceRequest

    from protocol.build import build
    value = b"x" * 1000
    batch = build_batch([Record(offset=i, timestamp=int(time.time() * 1000), key=None, value=value, headers=())
                         for i in range(batch_kb)], producer_id=pid, producer_epoch=epoch, base_sequence=0)
    frame = bytearray(encode_request(build(ProduceRequest, {
        "transactional_id": None, "acks": -1, "timeout": 30000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": bytes(batch)}]}]}), 1, "micro"))
    at, end = frame.index(bytes(batch)), frame.index(bytes(batch)) + len(batch)
    for i in range(count):
        struct.pack_into(">i", frame, at + 53, i * batch_kb)  # base_sequence
        struct.pack_into(">I", frame, at + 17, crc32c(memoryview(frame)[at + 21:end]))
        struct.pack_into(">i", frame, 8, i)  # correlation id
        yield bytes(frame)


def _fetch_frames(topic: str, isolation: int, offsets: Any) -> Any:
    from kio.schema.fetch.v12.request import FetchRequest

    from protocol.build import build
    for i, offset in enumerate(offsets):
        yield encode_request(build(FetchRequest, {
            "replica_id": -1, "max_wait": 500, "min_bytes": 1, "max_bytes": 50 << 20, "isolation_level": isolation,
            "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{
                "partition": 0, "fetch_offset": offset, "current_leader_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": 1 << 20}]}]}),
            i, "micro")


def _pipeline(sock: socket.socket, frames: Any) -> list[bytes]:
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


def _fetch_all(sock: socket.socket, topic: str, isolation: int, end: int) -> tuple[int, int]:
    """Fetch from offset 0 to end, one request at a time (the next offset comes from the last
    response's last batch). Returns (requests, bytes)."""
    offset, requests, total = 0, 0, 0
    while offset < end:
        sock.sendall(next(_fetch_frames(topic, isolation, [offset])))
        body = _response(sock)
        requests += 1
        records = _records_of(body)
        total += len(records)
        if not records:
            raise SystemExit(f"fetch at offset {offset} of {end} returned nothing")
        offset = _next_offset(records)
    return requests, total


def _records_of(body: bytes) -> bytes:
    # Fetch v12 response: header v1 (correlation id, tagged fields), then throttle, error, session,
    # topics (one), its name, partitions (one): fixed fields, aborted list, preferred replica, records.
    from kio.schema.fetch.v12.response import FetchResponse

    from protocol.codec import _reader
    _, pos = _reader(FetchResponse.__header_schema__)(body, 0)
    resp, _ = _reader(FetchResponse)(body, pos)
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
    args = parser.parse_args()
    with EmbeddedBroker() as b:
        assert b.proc is not None
        pid = b.proc.pid
        b.create_topic("micro", 1)
        producer = _producer_id(b.bootstrap_servers)
        count = args.mb * 1024 // args.batch_kb
        spy = None
        if args.py_spy:
            spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--format", "raw",
                                    "--rate", "200", "--nonblocking", "-o", args.py_spy, "-p", str(pid)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
        with socket.create_connection(("127.0.0.1", int(b.bootstrap_servers.rsplit(":", 1)[1]))) as sock:
            c0, t0, u0 = _cpu_s(pid), time.perf_counter(), _cpu_split(pid)
            _pipeline(sock, _produce_frames("micro", args.batch_kb, count, *producer))
            c1, t1, u1 = _cpu_s(pid), time.perf_counter(), _cpu_split(pid)
            requests = fetched = 0
            for _ in range(args.fetch_passes):
                r, f = _fetch_all(sock, "micro", args.isolation, count * args.batch_kb)
                requests, fetched = requests + r, fetched + f
            c2, t2, u2 = _cpu_s(pid), time.perf_counter(), _cpu_split(pid)
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait()
        gb = count * args.batch_kb * 1024 / 1e9
        load = os.getloadavg()[0]
        print(f"produce: {count} requests of {args.batch_kb} KiB, broker CPU {c1 - c0:.2f} s = "
              f"{(c1 - c0) / gb:.2f} s/GB, {1e6 * (c1 - c0) / count:.0f} us/request (user {u1[0] - u0[0]:.2f} s, "
              f"system {u1[1] - u0[1]:.2f} s), wall {t1 - t0:.1f} s, load {load:.1f}")
        print(f"fetch:   {requests} requests, {fetched / 1e6:.0f} MB, broker CPU {c2 - c1:.2f} s = "
              f"{(c2 - c1) / (fetched / 1e9):.2f} s/GB, {1e6 * (c2 - c1) / requests:.0f} us/request (user "
              f"{u2[0] - u1[0]:.2f} s, system {u2[1] - u1[1]:.2f} s), wall {t2 - t1:.1f} s")


if __name__ == "__main__":
    main()
