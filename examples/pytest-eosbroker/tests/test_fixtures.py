"""The plugin's other faces: create_topic, kill/restart, the session-scoped broker, the context manager."""

import socket

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from broker.embedded import EmbeddedBroker


def produce(bootstrap: str, topic: str, values: list[bytes], partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for value in values:
        producer.produce(topic, value=value, partition=partition)
    assert producer.flush(30) == 0


def read(bootstrap: str, topic: str, count: int, partition: int = 0) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, 0)])
    values = []
    while len(values) < count:
        msg = consumer.poll(10)
        assert msg is not None and not msg.error(), msg and msg.error()
        values.append(msg.value())
    consumer.close()
    return values


def test_create_topic(eosbroker):
    eosbroker.create_topic("compacted", partitions=3, config={"cleanup.policy": "compact"})
    admin = AdminClient({"bootstrap.servers": eosbroker.bootstrap_servers})
    assert len(admin.list_topics(timeout=10).topics["compacted"].partitions) == 3
    with pytest.raises(Exception, match="already exists"):
        eosbroker.create_topic("compacted")


def test_data_survives_kill_and_restart(eosbroker):
    eosbroker.create_topic("ledger")
    produce(eosbroker.bootstrap_servers, "ledger", [b"one", b"two"])
    before = eosbroker.bootstrap_servers
    eosbroker.kill()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", eosbroker.port), timeout=5)
    eosbroker.restart()
    assert eosbroker.bootstrap_servers == before
    produce(eosbroker.bootstrap_servers, "ledger", [b"three"])
    assert read(eosbroker.bootstrap_servers, "ledger", 3) == [b"one", b"two", b"three"]


@pytest.mark.parametrize("topic", ["session-a", "session-b"])
def test_session_broker_is_shared(eosbroker_session, topic):
    eosbroker_session.create_topic(topic)
    produce(eosbroker_session.bootstrap_servers, topic, [topic.encode()])
    topics = AdminClient({"bootstrap.servers": eosbroker_session.bootstrap_servers}).list_topics(timeout=10).topics
    # the second test sees the first one's topic: one broker for the session
    assert {"session-a", topic} <= set(topics)


def test_context_manager():
    with EmbeddedBroker(settings={"num.partitions": "2"}) as broker:
        produce(broker.bootstrap_servers, "auto-created", [b"x"], partition=1)
        assert read(broker.bootstrap_servers, "auto-created", 1, partition=1) == [b"x"]
        directory = broker.directory
        assert (directory / "broker.log").exists()
    assert not broker.running()
    assert not directory.exists()  # a temporary directory of its own, removed after a clean run
