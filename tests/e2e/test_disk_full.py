"""Issue 9: a full disk, for real. The broker's data dir is a small tmpfs; an idempotent
confluent-kafka producer fills it. Appends that do not fit are undone and answered with the
retriable KAFKA_STORAGE_ERROR (the connection stays up, the broker logs no traceback); once a
filler file is deleted the producer's remaining messages are acknowledged, and every acknowledged
record is readable exactly once, also after kill -9 and a restart."""

from __future__ import annotations

import errno
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.broker_process import BrokerProcess
from tests.conftest import BrokerFactory

pytestmark = pytest.mark.e2e

TOPIC = "full"
MESSAGES = 1500
VALUE_PAD = b"." * 1000
SLACK = 256 * 1024  # room left after filling: a few hundred messages fit, the rest do not
DEADLINE_S = 60


@pytest.fixture
def tmpfs_data_dir(tmp_path: Path) -> Iterator[Path]:
    """<tmp_path>/data as an 8 MiB tmpfs. Needs root (CAP_SYS_ADMIN), as the suite has here and in
    CI: a test that cannot mount fails rather than passing without a full disk."""
    data = tmp_path / "data"
    data.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(data)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs for the disk-full test (run as root): {done.stderr.strip()}")
    try:
        yield data
    finally:
        subprocess.run(["umount", "-l", str(data)], check=False)


def fill(directory: Path, slack: int, name: str = "filler") -> Path:
    """Write a filler file until the file system is full, then give back slack bytes."""
    filler = directory / name
    chunk = b"\0" * 4096
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        while os.write(fd, chunk):
            pass
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)
    os.truncate(filler, max(filler.stat().st_size - slack, 0))
    return filler


def wait_for(condition, what: str, producer: Producer | None = None) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        if producer is not None:
            producer.poll(0.1)
        else:
            time.sleep(0.1)  # polling a condition, not synchronising


def probe_storage_error(bootstrap: str) -> KafkaError | None:
    """One produce without retries: the error the broker answers, as the client sees it."""
    errors: list[KafkaError | None] = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "retries": 0,
                  "enable.idempotence": False, "message.timeout.ms": 20000})
    p.produce(TOPIC, b"probe" * 4096, partition=0, on_delivery=lambda err, _msg: errors.append(err))
    p.flush(30)
    return errors[0] if errors else None


def read_all(bootstrap: str) -> Counter[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "disk-full-reader", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    seen: Counter[bytes] = Counter()
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        msg = c.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                break
            raise AssertionError(msg.error())
        seen[msg.value()] += 1
    c.close()
    return seen


def test_issue_9_disk_full_answers_storage_error_and_loses_nothing(
    tmpfs_data_dir: Path, broker_factory: BrokerFactory
) -> None:
    broker: BrokerProcess = broker_factory({"num.partitions": "1"}, name="data")
    filler = fill(tmpfs_data_dir, SLACK)
    acked: list[bytes] = []
    failed: list[KafkaError] = []

    def delivered(err: KafkaError | None, msg: object) -> None:
        (failed.append(err) if err else acked.append(msg.value()))  # type: ignore[attr-defined]

    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 5, "batch.size": 32768, "delivery.timeout.ms": 300000, "retry.backoff.ms": 200})
    for i in range(MESSAGES):
        p.produce(TOPIC, b"m-%05d" % i + VALUE_PAD, partition=0, on_delivery=delivered)
    wait_for(lambda: broker.logged("answering KAFKA_STORAGE_ERROR"), "the disk to fill up", p)
    # The last pages of the log may still take a small batch: fill them too, then probe with a
    # batch that needs a new page.
    second = fill(tmpfs_data_dir, 0, "filler-2")
    error = probe_storage_error(broker.bootstrap)
    assert error is not None and error.code() == KafkaError.KAFKA_STORAGE_ERROR, error
    # Retriable by the protocol: the idempotent producer keeps retrying its batches (no delivery
    # fails below), while a producer without retries reports the code itself (above).
    assert len(acked) < MESSAGES and not failed

    filler.unlink()
    second.unlink()
    assert p.flush(DEADLINE_S) == 0
    assert not failed, failed[:3]
    assert len(acked) == MESSAGES
    assert broker.logged("appends succeed again")
    assert not broker.logged("Traceback")

    expected = Counter(acked)
    assert read_all(broker.bootstrap) == expected
    broker.restart(kill=True)
    assert read_all(broker.bootstrap) == expected
