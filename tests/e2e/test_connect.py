"""A stock Kafka Connect distributed worker (ConnectDistributed, from `make kafka-tools`) against
the broker, with exactly.once.source.support=enabled: a FileStreamSource connector reads a file's
lines into a topic, a FileStreamSink connector writes the topic to another file.

The worker uses what Connect uses: its config, offset and status topics created with
cleanup.policy=compact, a group of its own (the connect protocol over JoinGroup/SyncGroup), and
for the exactly-once source a transactional producer per task (records and source offsets in one
transaction), a fencing of the previous generation's producers (Admin.fenceProducers) and a
read_committed read of its offsets. Killed with SIGKILL and restarted, the worker goes on from the
offsets it committed with its records, so the topic holds each line once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from tests.broker_process import BrokerProcess
from tests.e2e.connect_process import ConnectProcess, free_port, rest, write_properties
from tests.e2e.txn_clients import wait_until

pytestmark = pytest.mark.e2e

WAIT_S = 120.0
GROUP = "connect-cluster"
INTERNAL = {"config": "connect-configs", "offset": "connect-offsets", "status": "connect-status"}
TOPIC = "file-lines"


@pytest.fixture
def broker(module_broker: BrokerProcess) -> BrokerProcess:
    return module_broker


class Worker:
    """A Connect worker process and its REST API; restarted on the same properties file."""

    def __init__(self, bootstrap: str, tmp: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.properties = write_properties(tmp / "worker.properties", {
            "bootstrap.servers": bootstrap, "group.id": GROUP,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "config.storage.topic": INTERNAL["config"], "offset.storage.topic": INTERNAL["offset"],
            "status.storage.topic": INTERNAL["status"], "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1", "status.storage.replication.factor": "1",
            "offset.storage.partitions": "3", "status.storage.partitions": "2",
            "exactly.once.source.support": "enabled", "listeners": self.url,
            "offset.flush.interval.ms": "500",
            # the plugins' ServiceLoader manifests, not a reflective scan of every class of every jar
            # (the worker's own advice: it logs that all plugins have manifests); seconds of a start
            "plugin.discovery": "service_load",
            # a restarted worker takes the tasks of the killed one at once, not after up to 5 minutes
            "scheduled.rebalance.max.delay.ms": "0",
            # The killed worker's sink consumer stays in the sink's group until its session times
            # out, and the restarted task's join waits for that: 10 s rather than the consumer's 45.
            "consumer.session.timeout.ms": "10000", "consumer.heartbeat.interval.ms": "3000",
        })
        self.log = tmp / "worker.log"
        self.proc: ConnectProcess | None = None

    def start(self) -> None:
        self.proc = ConnectProcess("org.apache.kafka.connect.cli.ConnectDistributed", self.properties, self.log)
        wait_until(lambda: self.alive() and rest(f"{self.url}/connectors") is not None, "the worker's REST API", WAIT_S)

    def alive(self) -> bool:
        assert self.proc is not None
        return self.proc.alive()

    def running(self, name: str) -> bool:
        status = self.alive() and rest(f"{self.url}/connectors/{name}/status")
        if not status:
            return False
        states = [status["connector"]["state"]] + [task["state"] for task in status["tasks"]]
        assert "FAILED" not in states, status
        return bool(status["tasks"]) and set(states) == {"RUNNING"}

    def create(self, name: str, config: dict[str, str]) -> None:
        wait_until(lambda: rest(f"{self.url}/connectors/{name}/config", "PUT", config) is not None,
                   f"connector {name} created", WAIT_S)
        wait_until(lambda: self.running(name), f"connector {name} running", WAIT_S)


@pytest.fixture
def worker(broker: BrokerProcess, tmp_path: Path) -> Iterator[Worker]:
    worker = Worker(broker.bootstrap, tmp_path)
    try:
        yield worker
    finally:
        if worker.proc is not None:
            worker.proc.stop()
            assert not worker.proc.errors(), "the worker logged errors:\n" + "\n".join(worker.proc.errors())


def committed_values(bootstrap: str, topic: str) -> list[str]:
    """Every record value of the topic's partition 0 up to its end, at read_committed."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "connect-reader",
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    values: list[str] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        while True:
            msg = consumer.poll(10)
            assert msg is not None, f"no answer reading {topic}"
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return values
                raise KafkaException(msg.error())
            values.append(msg.value().decode())
    finally:
        consumer.close()


def append_lines(path: Path, lines: list[str]) -> None:
    with path.open("a") as out:
        out.writelines(f"{line}\n" for line in lines)


def test_file_source_and_sink_exactly_once(broker: BrokerProcess, worker: Worker, tmp_path: Path) -> None:
    source, sink = tmp_path / "source.txt", tmp_path / "sink.txt"
    first = [f"line-{i}" for i in range(200)]
    append_lines(source, first)
    # one partition, so the topic's order is the file's
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    worker.start()
    worker.create("file-source", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max": "1",
        "file": str(source), "topic": TOPIC, "exactly.once.support": "required"})
    worker.create("file-sink", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "1",
        "file": str(sink), "topics": TOPIC})
    wait_until(lambda: len(committed_values(broker.bootstrap, TOPIC)) >= len(first), "the first lines", WAIT_S)
    assert committed_values(broker.bootstrap, TOPIC) == first

    # SIGKILL: whatever the source task had read past its last commit is read again from the
    # committed offset, and a transaction it left open is aborted by the next one's fencing.
    assert worker.proc is not None
    worker.proc.kill()
    second = [f"line-{i}" for i in range(200, 300)]
    append_lines(source, second)
    worker.start()
    wait_until(lambda: worker.running("file-source") and worker.running("file-sink"), "connectors after restart",
               WAIT_S)
    everything = first + second
    wait_until(lambda: len(committed_values(broker.bootstrap, TOPIC)) >= len(everything), "all lines", WAIT_S)
    assert committed_values(broker.bootstrap, TOPIC) == everything
    # The sink is at-least-once (its consumer offsets are committed after the file is written):
    # after the kill it may write some lines again, but every line gets there.
    wait_until(lambda: sink.exists() and set(sink.read_text().splitlines()) >= set(everything), "the sink file",
               WAIT_S)
    assert set(sink.read_text().splitlines()) == set(everything)
    assert_internal_topics_compacted(broker.bootstrap)


def assert_internal_topics_compacted(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resources = [ConfigResource(ConfigResource.Type.TOPIC, name) for name in INTERNAL.values()]
    for resource, future in admin.describe_configs(resources).items():
        assert future.result(30)["cleanup.policy"].value == "compact", resource
