"""--cleaner-on-off: a compacted topic kept dirty in the background while the cases run, so that
eosbroker's cleaner works through them (or, with log.cleaner.enable=false, does not)."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

TOPIC = "cleaner-dirt"
RATE_MB_S = 2.0
KEYS = 2000
CONFIG = {"cleanup.policy": "compact", "segment.bytes": str(1 << 20), "min.cleanable.dirty.ratio": "0.1"}


_PASS = re.compile(r"cleaned \S+: (\d+) bytes read, \d+ written \(.*\) in ([0-9.]+) s \([^)]*?(?:, ([0-9.]+) CPU s)?\)")


def pass_figures(log_path: Path) -> dict[str, float]:
    """The cleaner's throughput over a round, from its passes' log lines: MB of log read per second
    of pass and per CPU second of its worker (the figure a loaded machine does not skew)."""
    read = seconds = cpu = 0.0
    for m in map(_PASS.search, log_path.read_text(errors="replace").splitlines()):
        if m is not None:
            read, seconds, cpu = read + int(m.group(1)), seconds + float(m.group(2)), cpu + float(m.group(3) or 0)
    out = {"cleaner MB/s": read / 1e6 / seconds} if seconds else {}
    return out | ({"cleaner MB/CPU s": read / 1e6 / cpu} if cpu else {})


class Dirtier:
    """A context manager: produces 1 KiB values over KEYS keys at RATE_MB_S until the block ends."""

    def __init__(self, bootstrap: str) -> None:
        self._bootstrap = bootstrap
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dirtier", daemon=True)
        self.produced = 0

    def __enter__(self) -> Dirtier:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self._bootstrap})
        for future in admin.create_topics([NewTopic(TOPIC, 1, 1, config=CONFIG)]).values():
            future.result(30)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self._bootstrap, "linger.ms": 20, "enable.idempotence": True})
        value = b"d" * 1024
        per_tick = int(RATE_MB_S * 1024 / 10)  # records per 100 ms
        while not self._stop.is_set():
            tick = time.monotonic()
            for _ in range(per_tick):
                p.produce(TOPIC, key=b"key-%d" % (self.produced % KEYS), value=value)
                self.produced += 1
            p.poll(0)
            self._stop.wait(max(0.0, 0.1 - (time.monotonic() - tick)))
        p.flush(30)
