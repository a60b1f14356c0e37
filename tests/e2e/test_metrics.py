"""The Prometheus endpoint of a real broker (metrics.port=0, the port read from its start-up log)
scraped while confluent-kafka produces, consumes and runs transactions: Kafka's dashboard names
with exact counts, eosbroker's transaction series, /healthz and /readyz; and its start-up failures."""

from __future__ import annotations

import http.client
import re
import socket
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from prometheus_client.parser import text_string_to_metric_families

from tests.broker_process import BrokerProcess
from tests.e2e.test_startup import refused
from tests.e2e.txn_clients import WAIT_S, confluent_read, create_topics, plain_producer, txn_producer, wait_until

pytestmark = pytest.mark.e2e

SETTINGS = {"metrics.port": "0", "offsets.topic.num.partitions": "2", "transaction.state.log.num.partitions": "2",
            "group.initial.rebalance.delay.ms": "0",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}
_METRICS_PORT = re.compile(r"metrics endpoint on http://[^ ]+:(\d+)/metrics")
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


class Scraper:
    def __init__(self, broker: BrokerProcess) -> None:
        found = [m for line in broker.log_lines if (m := _METRICS_PORT.search(line))]
        assert found, "the broker logged no metrics endpoint"
        self.port = int(found[0][1])

    def get(self, path: str) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT_S)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read().decode()
        finally:
            conn.close()

    def samples(self) -> Samples:
        status, text = self.get("/metrics")
        assert status == 200
        return {(s.name, frozenset(s.labels.items())): s.value
                for family in text_string_to_metric_families(text) for s in family.samples}

    def value(self, name: str, **labels: str) -> float:
        return self.samples()[(name, frozenset(labels.items()))]


def requests(samples: Samples, api: str) -> float:
    """Requests of one API, every version."""
    return sum(v for (name, labels), v in samples.items()
               if name == "kafka_network_requestmetrics_requests_total" and ("request", api) in labels)


def produce_plain(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = plain_producer(bootstrap)
    for v in values:
        producer.produce(topic, v, partition=0)
    assert producer.flush(WAIT_S) == 0


def test_metrics_while_producing_consuming_and_transacting(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    scraper = Scraper(broker)
    assert scraper.get("/healthz")[0] == 200
    assert scraper.get("/readyz") == (200, "ready\n")
    create_topics(broker.bootstrap, ["m"], 1)
    values = [f"value-{i}".encode() * 10 for i in range(20)]
    produce_plain(broker.bootstrap, "m", values)
    assert len(confluent_read(broker.bootstrap, {"m": 1}, "read_uncommitted", 20)) == 20

    s = scraper.samples()
    assert s[("kafka_server_brokertopicmetrics_messagesin_total", frozenset({("topic", "m")}))] == 20
    assert s[("kafka_server_brokertopicmetrics_bytesin_total", frozenset({("topic", "m")}))] >= sum(map(len, values))
    assert s[("kafka_server_brokertopicmetrics_bytesout_total", frozenset({("topic", "m")}))] >= sum(map(len, values))
    assert s[("kafka_server_brokertopicmetrics_bytesin_total", frozenset())] >= sum(map(len, values))
    produce_requests = requests(s, "Produce")
    assert produce_requests > 0
    assert s[("kafka_network_requestmetrics_totaltimems_count", frozenset({("request", "Produce")}))] == \
        produce_requests
    assert s[("kafka_log_log_size", frozenset({("topic", "m"), ("partition", "0")}))] > 0
    assert s[("kafka_server_replicamanager_partitioncount", frozenset())] == 1 + 2 + 2

    txn = txn_producer(broker.bootstrap, "metrics-txn")
    txn.begin_transaction()
    for i in range(3):
        txn.produce("m", f"txn-{i}".encode(), partition=0)
    assert txn.flush(WAIT_S) == 0
    lag = ("eosbroker_partition_last_stable_offset_lag", frozenset({("topic", "m"), ("partition", "0")}))
    age = ("eosbroker_partition_oldest_open_transaction_age_seconds", frozenset({("topic", "m"), ("partition", "0")}))
    s = scraper.samples()
    assert s[lag] == 3
    assert s[age] >= 0
    assert s[("eosbroker_transactions_ongoing", frozenset())] == 1
    txn.commit_transaction(WAIT_S)
    wait_until(lambda: scraper.samples()[lag] == 0, "the LSO to reach the high watermark after the commit")
    assert age not in scraper.samples()

    txn.begin_transaction()
    txn.produce("m", b"aborted", partition=0)
    assert txn.flush(WAIT_S) == 0
    txn.abort_transaction(WAIT_S)
    wait_until(lambda: scraper.samples()[lag] == 0, "the LSO to reach the high watermark after the abort")
    s = scraper.samples()
    assert s[("kafka_server_brokertopicmetrics_messagesin_total", frozenset({("topic", "m")}))] == 20 + 3 + 1
    assert s[("eosbroker_transactions_committed_total", frozenset())] == 1
    assert s[("eosbroker_transactions_aborted_total", frozenset({("cause", "client")}))] == 1
    assert s[("eosbroker_transactions_ongoing", frozenset())] == 0
    assert requests(s, "EndTxn") == 2
    assert s[("kafka_server_socket_server_metrics_connection_count",
              frozenset({("listener", "PLAINTEXT"), ("security_protocol", "PLAINTEXT"),
                         ("networkprocessor", "0")}))] >= 1


def test_aborts_by_fencing_and_timeout_and_group_states(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    scraper = Scraper(broker)
    create_topics(broker.bootstrap, ["f"], 1)
    old = txn_producer(broker.bootstrap, "fenced")
    old.begin_transaction()
    old.produce("f", b"zombie", partition=0)
    assert old.flush(WAIT_S) == 0
    txn_producer(broker.bootstrap, "fenced")  # a new instance: the old one's transaction is aborted
    assert scraper.value("eosbroker_transactions_aborted_total", cause="fencing") == 1

    slow = txn_producer(broker.bootstrap, "slow", **{"transaction.timeout.ms": 1000})
    slow.begin_transaction()
    slow.produce("f", b"late", partition=0)
    assert slow.flush(WAIT_S) == 0
    wait_until(lambda: scraper.value("eosbroker_transactions_aborted_total", cause="timeout") == 1,
               "the coordinator to abort the timed-out transaction")
    assert scraper.value("eosbroker_transactions_aborted_total", cause="client") == 0
    assert scraper.value("eosbroker_transactions_committed_total") == 0

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "dashboard",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["f"])
        deadline = time.monotonic() + WAIT_S
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert consumer.assignment()
        prefix = "kafka_coordinator_group_groupmetadatamanager_"
        assert scraper.value(prefix + "numgroupsstable") == 1
        assert scraper.value(prefix + "numgroups") == 1
    finally:
        consumer.close()
    wait_until(lambda: scraper.value(prefix + "numgroupsempty") == 1, "the group to be empty after the leave")


def test_metrics_port_in_use_is_a_one_line_failure(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        line = refused(tmp_path, "--port", "0", "--data-dir", str(tmp_path / "data"), "--set", f"metrics.port={port}")
    assert line == f"eosbroker: metrics.port={port}: cannot listen on 127.0.0.1:{port}: address already in use"
    assert not (tmp_path / "data").exists()


def test_bad_metrics_port_is_refused(tmp_path: Path) -> None:
    line = refused(tmp_path, "--port", "0", "--data-dir", str(tmp_path / "data"), "--set", "metrics.port=70000")
    assert line == "eosbroker: Invalid value 70000 for configuration metrics.port: Value must be no more than 65535"
