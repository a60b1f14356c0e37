"""Fetch v13-v18 (topics by id, KIP-516) against the real broker: raw requests at every version
(known, unknown and zero ids, sessions across versions, forgotten topics, read_committed with an
aborted transaction), the Java 4.x consumer reading what confluent-kafka wrote (at v18, as the
broker's request metrics show), and Kafka's ReplicaVerificationTool, which sends v18 and failed
with "The node does not support FETCH" while the broker stopped at v12."""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from protocol.build import build
from protocol.codec import request_schema
from protocol.errors import ErrorCode
from protocol.record_batch import iter_batches
from tests.broker_process import BrokerProcess
from tests.e2e.test_java_clients import compile_java, java4_jars
from tests.e2e.test_metrics import SETTINGS as METRICS_SETTINGS
from tests.e2e.test_metrics import Scraper
from tests.e2e.test_transactions_v2 import requests_by_version
from tests.e2e.txn_clients import WAIT_S, create_topics, plain_producer, txn_producer
from tests.kafka_tools import MAIN_CLASSES, tools_classpath
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e

E = ErrorCode
SOURCE = Path(__file__).parent / "java" / "CompactedRead.java"


@pytest.fixture
def broker(module_broker: BrokerProcess) -> BrokerProcess:
    """The tests here share one broker (tests/e2e/conftest.py's module_broker): none restarts it,
    and each names topics, groups and ids of its own."""
    return module_broker


def topic_id(client: RawClient, name: str) -> uuid.UUID:
    r = client.request(MetadataRequest(topics=(MetadataRequestTopic(name=name, topic_id=None),),
                                       allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    found: uuid.UUID = r.topics[0].topic_id
    return found


def fetch(client: RawClient, version: int, topics: list[tuple[Any, list[int]]], *, session_id: int = 0,
          epoch: int = -1, forgotten: list[tuple[Any, list[int]]] | None = None, isolation: int = 0,
          offset: int = 0) -> Any:
    """One Fetch; topics as (id, partitions) from v13, (name, partitions) before."""
    key = "topic_id" if version >= 13 else "topic"
    replica = {"replica_state": {"replica_id": -1, "replica_epoch": -1}} if version >= 15 else {"replica_id": -1}
    return client.request(build(request_schema(1, version), {
        **replica, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": isolation,
        "session_id": session_id, "session_epoch": epoch, "rack_id": "",
        "forgotten_topics_data": [{key: t, "partitions": ps} for t, ps in forgotten or []],
        "topics": [{key: t, "partitions": [
            {"partition": p, "current_leader_epoch": -1, "fetch_offset": offset, "last_fetched_epoch": -1,
             "log_start_offset": -1, "partition_max_bytes": 1 << 20} for p in ps]} for t, ps in topics]}))


def answered(response: Any) -> list[tuple[Any, int, ErrorCode, int]]:
    """(topic id, partition, error, records) of each partition answered."""
    return [(t.topic_id, p.partition_index, p.error_code, records(p)) for t in response.responses
            for p in t.partitions]


def records(partition: Any) -> int:
    return sum(h.last_offset - h.base_offset + 1 for _, h in iter_batches(partition.records or b""))


def produce(bootstrap: str, topic: str, partition: int, n: int) -> None:
    producer = plain_producer(bootstrap)
    for i in range(n):
        producer.produce(topic, value=b"%d" % i, partition=partition)
    assert producer.flush(WAIT_S) == 0


def test_every_version_answers_known_unknown_and_zero_ids(broker: BrokerProcess) -> None:
    create_topics(broker.bootstrap, ["ids"], 2)
    produce(broker.bootstrap, "ids", 0, 3)
    unknown = uuid.uuid4()
    with RawClient(broker.bootstrap) as client:
        known = topic_id(client, "ids")
        for version in range(13, 19):
            r = fetch(client, version, [(known, [0, 1]), (unknown, [0]), (None, [2])])
            assert (r.error_code, r.session_id) == (E.none, 0)
            assert answered(r) == [(known, 0, E.none, 3), (known, 1, E.none, 0), (unknown, 0, E.unknown_topic_id, 0),
                                   (None, 2, E.unknown_topic_id, 0)], version  # kio reads the zero UUID as None
            assert [p.high_watermark for t in r.responses for p in t.partitions] == [3, 0, -1, -1]
        # v12 names the topic, as before.
        assert [(t.topic, p.error_code, records(p)) for t in fetch(client, 12, [("ids", [0])]).responses
                for p in t.partitions] == [("ids", E.none, 3)]


def test_sessions_by_topic_id_and_across_versions(broker: BrokerProcess) -> None:
    """A v17 session keyed by topic id: forgotten by id, an unknown id answered in every
    incremental fetch (errors are always sent); a v12 session continued at v13 (and a v13 one at
    v12) is FETCH_SESSION_TOPIC_ID_ERROR, and stays usable at its own kind of version."""
    create_topics(broker.bootstrap, ["sess"], 2)
    unknown = uuid.uuid4()
    with RawClient(broker.bootstrap) as client:
        known = topic_id(client, "sess")
        first = fetch(client, 17, [(known, [0, 1]), (unknown, [0])], epoch=0)
        sid = first.session_id
        assert sid != 0 and answered(first) == [(known, 0, E.none, 0), (known, 1, E.none, 0),
                                                (unknown, 0, E.unknown_topic_id, 0)]
        forgot = fetch(client, 17, [], session_id=sid, epoch=1, forgotten=[(known, [1])])
        assert answered(forgot) == [(unknown, 0, E.unknown_topic_id, 0)]  # the rest did not change
        produce(broker.bootstrap, "sess", 1, 2)
        produce(broker.bootstrap, "sess", 0, 1)
        moved = fetch(client, 18, [], session_id=sid, epoch=2)  # a later version, still by id
        assert answered(moved) == [(known, 0, E.none, 1), (unknown, 0, E.unknown_topic_id, 0)]  # not 1: forgotten
        wrong = fetch(client, 12, [], session_id=sid, epoch=3)
        assert (wrong.error_code, wrong.session_id, wrong.responses) == (E.fetch_session_topic_id_error, 0, ())

        named = fetch(client, 12, [("sess", [1])], epoch=0)
        assert named.session_id != 0 and [records(p) for t in named.responses for p in t.partitions] == [2]
        wrong = fetch(client, 13, [], session_id=named.session_id, epoch=1)
        assert (wrong.error_code, wrong.session_id) == (E.fetch_session_topic_id_error, 0)
        still = fetch(client, 12, [], session_id=named.session_id, epoch=1)  # at offset 0 still: the records again
        assert (still.error_code, still.session_id, [records(p) for t in still.responses for p in t.partitions]) == \
            (E.none, named.session_id, [2])
        assert fetch(client, 13, [], session_id=sid, epoch=3).error_code is E.none  # its epoch did not move


def test_a_recreated_topic_in_a_session_is_inconsistent_topic_id(broker: BrokerProcess) -> None:
    from confluent_kafka.admin import AdminClient
    create_topics(broker.bootstrap, ["again"], 1)
    with RawClient(broker.bootstrap) as client:
        old = topic_id(client, "again")
        first = fetch(client, 16, [(old, [0])], epoch=0)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.delete_topics(["again"])["again"].result(WAIT_S)
        create_topics(broker.bootstrap, ["again"], 1)
        assert topic_id(client, "again") != old
        r = fetch(client, 16, [], session_id=first.session_id, epoch=1)
        assert answered(r) == [(old, 0, E.inconsistent_topic_id, 0)]
        assert answered(fetch(client, 16, [(old, [0])])) == [(old, 0, E.unknown_topic_id, 0)]


def test_read_committed_at_v18_lists_the_aborted_transaction(broker: BrokerProcess) -> None:
    create_topics(broker.bootstrap, ["rc"], 1)
    producer = txn_producer(broker.bootstrap, "rc-txn")
    for commit, n in ((True, 2), (False, 3), (True, 1)):
        producer.begin_transaction()
        for i in range(n):
            producer.produce("rc", value=b"%d" % i, partition=0)
        producer.flush(WAIT_S)  # abort_transaction drops what librdkafka has not sent yet
        (producer.commit_transaction if commit else producer.abort_transaction)(WAIT_S)
    with RawClient(broker.bootstrap) as client:
        known = topic_id(client, "rc")
        committed = fetch(client, 18, [(known, [0])], isolation=1)
        (p,) = committed.responses[0].partitions
        # 2 records + marker, 3 aborted + marker, 1 + marker: the aborted run starts at offset 3.
        assert (p.error_code, p.high_watermark, p.last_stable_offset, records(p)) == (E.none, 9, 9, 9)
        assert [a.first_offset for a in p.aborted_transactions] == [3]
        late = fetch(client, 18, [(known, [0])], isolation=1, offset=7)  # past the aborted run
        assert list(late.responses[0].partitions[0].aborted_transactions) == []
        uncommitted = fetch(client, 18, [(known, [0])], isolation=0)
        assert uncommitted.responses[0].partitions[0].aborted_transactions is None


@pytest.fixture(scope="module")
def java4(tmp_path_factory: pytest.TempPathFactory) -> str:
    return compile_java(tmp_path_factory.mktemp("java4-fetch"), SOURCE, java4_jars(), "-nowarn")


def test_the_java4_consumer_reads_committed_records_at_fetch_v18(java4: str, broker_factory) -> None:  # type: ignore[no-untyped-def]
    """confluent-kafka writes committed and aborted transactions; the Java 4.x consumer (topic ids
    from Metadata, so Fetch by id) reads the committed records only, and every Fetch it sent was
    v18 (Kafka 4.4's latest)."""
    broker = broker_factory(METRICS_SETTINGS)
    create_topics(broker.bootstrap, ["j4"], 1)
    producer = txn_producer(broker.bootstrap, "j4-txn")
    for commit, values in ((True, [b"a", b"b"]), (False, [b"x", b"y"]), (True, [b"c"])):
        producer.begin_transaction()
        for v in values:
            producer.produce("j4", key=v, value=v, partition=0)
        producer.flush(WAIT_S)  # abort_transaction drops what librdkafka has not sent yet
        (producer.commit_transaction if commit else producer.abort_transaction)(WAIT_S)
    before = requests_by_version(Scraper(broker).samples(), "Fetch")
    proc = subprocess.run(["java", "-cp", java4, "CompactedRead", broker.bootstrap, "j4", "8", "read_committed"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = [line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("REC ")]
    assert got == [["0", "a", "a"], ["1", "b", "b"], ["6", "c", "c"]]
    assert "CHECK position 8" in proc.stdout
    fetches = requests_by_version(Scraper(broker).samples(), "Fetch")
    assert before == {} and set(fetches) == {18}, fetches


def test_replica_verification_tool_verifies_the_partitions(broker: BrokerProcess) -> None:
    """ReplicaVerificationTool fetches at v18 as the debugging consumer (replica id -2) from every
    replica of each partition, and reports the lag of the slowest; one broker is one replica."""
    create_topics(broker.bootstrap, ["rv"], 2)
    produce(broker.bootstrap, "rv", 0, 5)
    cmd = ["java", "-cp", tools_classpath(), "org.apache.kafka.tools.ReplicaVerificationTool",
           "--broker-list", broker.bootstrap, "--topics-include", "rv", "--time", "-2", "--report-interval-ms", "500"]
    assert MAIN_CLASSES["kafka-replica-verification"] == cmd[3]
    lines: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        try:
            assert proc.stdout is not None
            deadline = time.monotonic() + 90  # a guard, not a speed limit
            while time.monotonic() < deadline and (line := proc.stdout.readline()):
                lines.append(line)
                if "max lag is 0" in line:
                    break
        finally:
            proc.kill()
    out = "".join(lines)
    assert "verification process is started" in out and "max lag is 0 for partition" in out, out
    assert "does not support" not in out and "Exception" not in out, out
