"""kill -9 while the broker cleans, many times: after every restart each key's latest value is
where it was written, and no record that cleaning removed comes back (old or new segments, never a
mixture)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from broker.embedded import create_topic
from tests.e2e.test_compaction import CLEANER, TOPIC_CONFIG, consume_all, produce

pytestmark = pytest.mark.e2e

TOPIC = "compacted-crash"
CYCLES = 6
KEYS = 25


def wait_for(condition, what: str, timeout: float = 300.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.002)


def set_dirty_ratio(bootstrap: str, ratio: str) -> None:
    """min.cleanable.dirty.ratio through IncrementalAlterConfigs: 1.0 holds the cleaner off while a
    cycle writes, a small ratio then starts one pass over all of it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    op = ConfigEntry("min.cleanable.dirty.ratio", ratio, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource("topic", TOPIC, incremental_configs=[op])
    admin.incremental_alter_configs([resource])[resource].result(30)


def test_kill_9_during_cleaning_loses_and_resurrects_nothing(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(CLEANER)
    create_topic(broker.bootstrap, TOPIC, 1, {**TOPIC_CONFIG, "min.cleanable.dirty.ratio": "1.0"})
    written: dict[int, tuple[bytes, bytes | None]] = {}
    visible: set[int] = set()  # offsets a consumer could still see after the last restart
    for cycle in range(CYCLES):
        rows = [(b"k%d" % (i % KEYS), None if i % 13 == 5 else b"c%d-%d-" % (cycle, i) + b"x" * 30)
                for i in range(150)]
        set_dirty_ratio(broker.bootstrap, "1.0")
        new = produce(broker.bootstrap, TOPIC, rows, "lz4")
        written.update({o: (k, v) for o, k, v in new})
        # Killed while the worker writes cleaner-tmp/, or just after a pass has swapped.
        tmp = broker.data_dir / f"{TOPIC}-0" / "cleaner-tmp"
        passes = sum(f"cleaned {TOPIC}-0:" in line for line in broker.log_lines)
        set_dirty_ratio(broker.bootstrap, "0.01")
        if cycle % 2 == 0:
            wait_for(lambda: any(tmp.glob("*.log")), "a cleaning pass to write")  # noqa: B023
        else:
            wait_for(lambda: sum(f"cleaned {TOPIC}-0:" in line for line in broker.log_lines) > passes,  # noqa: B023
                     "a cleaning pass to swap")
        broker.restart(kill=True)
        got = consume_all(broker.bootstrap, TOPIC, max(written) + 1)
        offsets = {o for o, _, _ in got}
        assert all(written[o] == (k, v) for o, k, v in got), "a record differs from what was written there"
        resurrected = offsets - visible - {o for o, _, _ in new}
        assert not resurrected, f"cycle {cycle}: cleaned-away records came back: {sorted(resurrected)[:10]}"
        latest = {}
        for o in sorted(written):
            latest[written[o][0]] = o
        lost = [o for o in latest.values() if written[o][1] is not None and o not in offsets]
        assert not lost, f"cycle {cycle}: latest values lost at {lost}"
        visible = offsets
    recovered = [line.split(": ", 1)[-1].strip() for line in broker.log_lines
                 if "unfinished cleaning pass" in line or "cleaner swap interrupted" in line]
    print(f"\n{CYCLES} kills during cleaning; recoveries: {recovered}")
