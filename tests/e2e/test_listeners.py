"""Several listeners at once (issue 12): each serves clients, and Metadata, FindCoordinator and
DescribeCluster answer with the address of the listener the client came in on, as Kafka does."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

pytestmark = pytest.mark.e2e

TWO_PLAINTEXT = {"listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT"}


def test_metadata_answers_with_the_listener_the_client_came_in_on(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(TWO_PLAINTEXT)
    ports = broker.listener_ports
    assert set(ports) == {"PLAINTEXT", "INTERNAL"} and ports["PLAINTEXT"] != ports["INTERNAL"]
    for name, port in ports.items():
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_of(name)})
        brokers = admin.list_topics(timeout=10).brokers
        assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", port)], name
        described = admin.describe_cluster().result(timeout=10)
        assert [(n.host, n.port) for n in described.nodes] == [("127.0.0.1", port)], name


def test_each_listener_serves_producers_and_consumer_groups(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(TWO_PLAINTEXT)
    producer = Producer({"bootstrap.servers": broker.bootstrap_of("INTERNAL")})
    producer.produce("through-internal", value=b"one")
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_of("PLAINTEXT"), "group.id": "g",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["through-internal"])  # FindCoordinator and JoinGroup through the other listener
    msg = consumer.poll(15)
    assert msg is not None and msg.error() is None and msg.value() == b"one"
    consumer.commit(asynchronous=False)
    assert consumer.committed([TopicPartition("through-internal", 0)], timeout=10)[0].offset == 1
    consumer.close()
