"""Event-loop stall probe: how long the broker's event loop is blocked while producing.

Runs the broker in this process on uvloop with a probe task that sleeps 1 ms in a loop and
records how late each wake-up is; a second process produces with confluent-kafka (idempotent,
acks=all) to a topic whose segments roll every few MB, so roll, flush and snapshot costs show.

    python -m bench.loop_lag [--mb 96] [--segment-mb 4] [--flush-messages N]

Prints the overshoot's p50, p99, p99.9 and max in milliseconds. Figures depend on the disk:
compare runs on the same machine only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

TOPIC = "loop-lag"
PROBE_S = 0.001


def _produce(bootstrap: str, total_mb: int, partitions: int) -> None:
    """The client process: produce total_mb of 1 KiB values and wait for every ack."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                  "batch.size": 256 * 1024, "queue.buffering.max.kbytes": 256 * 1024})
    value = b"x" * 1024
    failed = []
    for i in range(total_mb * 1024):
        while True:
            try:
                p.produce(TOPIC, value, partition=i % partitions,
                          on_delivery=lambda err, _m: err and failed.append(err))
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    p.flush(120)
    if failed:
        raise SystemExit(f"{len(failed)} deliveries failed, first: {failed[0]}")


async def _probe(samples: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        t0 = time.perf_counter()
        await asyncio.sleep(PROBE_S)
        samples.append(time.perf_counter() - t0 - PROBE_S)


async def _run(args: argparse.Namespace, data_dir: Path) -> list[float]:
    from broker.config import build_config
    from broker.server import Broker

    props = {"log.segment.bytes": str(args.segment_mb << 20), "num.partitions": str(args.partitions)}
    if args.flush_messages:
        props["log.flush.interval.messages"] = str(args.flush_messages)
    config, _ = build_config(props, host="127.0.0.1", port=0, log_dirs=str(data_dir))
    broker = Broker(config)
    await broker.start()
    samples: list[float] = []
    stop = asyncio.Event()
    probe = asyncio.create_task(_probe(samples, stop))
    client = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.loop_lag", "--client", f"127.0.0.1:{broker.port}",
        "--mb", str(args.mb), "--partitions", str(args.partitions))
    code = await client.wait()
    stop.set()
    await probe
    await broker.stop()
    if code:
        raise SystemExit(f"producer exited with {code}")
    return samples


def _summary(samples: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples)
    q = statistics.quantiles(ms, n=1000)
    return {"samples": len(ms), "p50_ms": round(q[499], 3), "p99_ms": round(q[989], 3),
            "p999_ms": round(q[998], 3), "max_ms": round(ms[-1], 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.loop_lag", description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=96, help="MB to produce")
    ap.add_argument("--segment-mb", type=int, default=4, help="log.segment.bytes in MB")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--flush-messages", type=int, default=0, help="log.flush.interval.messages")
    ap.add_argument("--data-dir", type=Path, help="where the logs go (default: a temp dir)")
    ap.add_argument("--client", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.client:
        _produce(args.client, args.mb, args.partitions)
        return 0
    import uvloop

    with tempfile.TemporaryDirectory(dir=args.data_dir) as tmp:
        samples = uvloop.run(_run(args, Path(tmp)))
    print(json.dumps({"mb": args.mb, "segment_mb": args.segment_mb, **_summary(samples)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
