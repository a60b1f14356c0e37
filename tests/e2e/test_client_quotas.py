"""Client quotas with real clients: Kafka's kafka-configs sets, describes and deletes them, and a
confluent-kafka producer or consumer over its byte rate is throttled (librdkafka reports the
broker's throttle_time_ms in its statistics) while one under no quota is not, and nothing is lost.
The broker measures rates over 2 windows of 1 s (quota.window.num=2), so throttles last ~1 s."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker_process import BrokerProcess
from tests.e2e.test_kafka_tools import failing, tool
from tests.e2e.test_metrics import _METRICS_PORT, Scraper

WAIT_S = 60.0
RECORDS = 40
VALUE = b"v" * 1000


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("quotas") / "data",
                         {"quota.window.num": "2", "metrics.port": "0"}).start()
    yield proc
    proc.close()


def quotas_of(broker: BrokerProcess, *entity: str) -> str:
    return tool(broker, "kafka-configs", "--describe", *entity).strip()


def set_quotas(broker: BrokerProcess, configs: str, *entity: str) -> None:
    tool(broker, "kafka-configs", "--alter", "--add-config", configs, *entity)


def max_throttle_ms(stats: list[dict[str, Any]]) -> int:
    """The largest throttle time librdkafka saw from the broker (its `throttle` window, in ms)."""
    return max((b["throttle"]["max"] for s in stats for b in s["brokers"].values() if b["nodeid"] >= 0), default=-1)


def test_kafka_configs_sets_describes_and_deletes_quotas(broker: BrokerProcess) -> None:
    alice = ("--entity-type", "users", "--entity-name", "alice")
    set_quotas(broker, "producer_byte_rate=1024,consumer_byte_rate=2048", *alice)
    set_quotas(broker, "producer_byte_rate=4096", "--entity-type", "users", "--entity-name", "alice",
               "--entity-type", "clients", "--entity-default")
    assert quotas_of(broker, *alice) == \
        "Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0"
    assert quotas_of(broker, "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
                     "--entity-default") == \
        "Quota configs for user-principal 'alice', the default client-id are producer_byte_rate=4096.0"
    refused = failing(broker, "kafka-configs", "--alter", "--add-config", "request_percentage=50", *alice)
    assert "eosbroker does not enforce request_percentage quotas" in refused
    # Kept across a restart, clean or not.
    broker.restart(kill=True)
    assert "producer_byte_rate=1024.0" in quotas_of(broker, *alice)
    tool(broker, "kafka-configs", "--alter", "--delete-config", "producer_byte_rate,consumer_byte_rate", *alice)
    tool(broker, "kafka-configs", "--alter", "--delete-config", "producer_byte_rate", "--entity-type", "users",
         "--entity-name", "alice", "--entity-type", "clients", "--entity-default")
    assert quotas_of(broker, *alice) == ""
    assert quotas_of(broker, "--entity-type", "users") == ""


def produce(broker: BrokerProcess, topic: str, client_id: str) -> int:
    stats: list[dict[str, Any]] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": client_id, "linger.ms": 5,
                         "batch.size": 4096, "statistics.interval.ms": 200,
                         "stats_cb": lambda s: stats.append(json.loads(s))})
    for _ in range(RECORDS):
        producer.produce(topic, VALUE)
        producer.poll(0)
    assert producer.flush(WAIT_S) == 0
    producer.poll(0.5)  # one more statistics report
    return max_throttle_ms(stats)


def consume(broker: BrokerProcess, topic: str, client_id: str) -> tuple[list[bytes], int]:
    stats: list[dict[str, Any]] = []
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "client.id": client_id, "group.id": client_id,
                         "auto.offset.reset": "earliest", "statistics.interval.ms": 200,
                         "stats_cb": lambda s: stats.append(json.loads(s))})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    while len(values) < RECORDS and time.monotonic() < deadline:
        values += [m.value() for m in consumer.consume(100, 0.5) if m.error() is None]
    consumer.poll(0.5)
    consumer.close()
    return values, max_throttle_ms(stats)


def make_topic(broker: BrokerProcess, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        f.result(WAIT_S)


def scraper(broker: BrokerProcess) -> Scraper:
    """The metrics endpoint of the broker's latest start (the module restarts it)."""
    scraper = Scraper(broker)
    scraper.port = int([m for line in broker.log_lines if (m := _METRICS_PORT.search(line))][-1][1])
    return scraper


def test_a_producer_over_its_quota_is_throttled_and_loses_nothing(broker: BrokerProcess) -> None:
    make_topic(broker, "produced")
    set_quotas(broker, "producer_byte_rate=10000", "--entity-type", "clients", "--entity-name", "slow-producer")
    assert produce(broker, "produced", "free-producer") == 0
    assert produce(broker, "produced", "slow-producer") > 0  # 40 KB against 10 KB/s
    # Kafka's Produce quota sensor, as the JMX exporter names it; the unthrottled client has none.
    samples = scraper(broker).samples()
    slow = frozenset({("user", ""), ("client_id", "slow-producer")})
    assert samples[("kafka_server_produce_throttle_time", slow)] > 0
    assert samples[("kafka_server_produce_byte_rate", slow)] > 0
    assert not [key for key in samples if ("client_id", "free-producer") in key[1]]
    values, _ = consume(broker, "produced", "reader")
    assert values == [VALUE] * RECORDS * 2


def test_a_consumer_over_its_quota_is_throttled_and_reads_everything(broker: BrokerProcess) -> None:
    make_topic(broker, "fetched")
    assert produce(broker, "fetched", "writer") == 0
    set_quotas(broker, "consumer_byte_rate=10000", "--entity-type", "clients", "--entity-name", "slow-consumer")
    values, throttle_ms = consume(broker, "fetched", "free-consumer")
    assert values == [VALUE] * RECORDS and throttle_ms == 0
    values, throttle_ms = consume(broker, "fetched", "slow-consumer")
    assert values == [VALUE] * RECORDS and throttle_ms > 0
