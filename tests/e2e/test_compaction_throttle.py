"""log.cleaner.io.max.bytes.per.second and log.cleaner.threads on the real broker: every pass's own
log line shows it read no faster than the rate allows (a bound on bytes per second of the pass's
measured duration, which load can only lengthen)."""

from __future__ import annotations

import re

import pytest

from broker.embedded import create_topic
from tests.e2e.test_compaction import TOPIC_CONFIG, produce, wait_cleaned_to

pytestmark = pytest.mark.e2e

RATE = 100_000  # bytes/s
_LINE = re.compile(r"cleaned (\S+): (\d+) bytes read, (\d+) written \(.*\) in ([0-9.]+) s \(([^)]*)\)")


def test_passes_read_and_write_no_faster_than_the_rate(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory({"log.cleaner.backoff.ms": "50", "log.cleaner.threads": "2",
                             "log.cleaner.io.max.bytes.per.second": str(RATE),
                             "log.cleaner.io.buffer.size": "16384"})
    topics = ["throttled-a", "throttled-b"]
    for topic in topics:
        create_topic(broker.bootstrap, topic, 1, {**TOPIC_CONFIG, "segment.bytes": "16384"})
    for topic in topics:
        produced = produce(broker.bootstrap, topic, [(b"k%d" % (i % 10), b"v" * 200) for i in range(800)], "none")
        wait_cleaned_to(broker, f"{topic}-0", produced[len(produced) // 2][0])
    passes = [m for m in map(_LINE.search, broker.log_lines) if m is not None and m.group(1).startswith("throttled")]
    assert {m.group(1) for m in passes} == {"throttled-a-0", "throttled-b-0"}
    share = RATE / 2  # each of the two workers
    for m in passes:
        read, written, seconds = int(m.group(2)), int(m.group(3)), float(m.group(4))
        # the pass read its segments twice (the key map, then the copy) and wrote the cleaned ones
        assert (read + written) / seconds <= share * 1.01, m.group(0)
    # the largest pass (over 100 KB at 50 KB/s) had to wait
    largest = max(passes, key=lambda m: int(m.group(2)))
    assert int(largest.group(2)) > share and "s of it throttled" in largest.group(5), largest.group(0)
