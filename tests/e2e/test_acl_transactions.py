"""A transactional producer and a read_committed consumer (confluent-kafka) under ACLs: with the
ACLs Kafka's documentation lists for them the whole exactly-once loop works, and without each one
the client gets Kafka's error for it. The principal is User:ANONYMOUS (a PLAINTEXT listener): it is
a super user only while it grants itself ALTER on the CLUSTER (to manage ACLs), then the broker
restarts without super users, which also shows the ACLs are durable."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.broker_process import BrokerProcess
from tests.conftest import BrokerFactory

pytestmark = pytest.mark.e2e

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
ME = "User:ANONYMOUS"
WAIT_S = 30.0


def allow(resource: ResourceType, name: str, operation: AclOperation) -> AclBinding:
    return AclBinding(resource, name, ResourcePatternType.LITERAL, ME, "*", operation, AclPermissionType.ALLOW)


def as_filter(acl: AclBinding) -> AclBindingFilter:
    return AclBindingFilter(acl.restype, acl.name, acl.resource_pattern_type, acl.principal, acl.host,
                            acl.operation, acl.permission_type)


# What a transactional read-process-write client needs (Kafka's docs, "Authorization"): WRITE on the
# topic it writes and on its transactional id, READ on the topic it reads and on its group.
WRITE_TOPIC = allow(ResourceType.TOPIC, "orders", AclOperation.WRITE)
READ_TOPIC = allow(ResourceType.TOPIC, "orders", AclOperation.READ)
WRITE_TXN = allow(ResourceType.TRANSACTIONAL_ID, "tx-orders", AclOperation.WRITE)
READ_GROUP = allow(ResourceType.GROUP, "billing", AclOperation.READ)
GRANTS = (WRITE_TOPIC, READ_TOPIC, WRITE_TXN, READ_GROUP)


class Acls:
    def __init__(self, broker: BrokerProcess) -> None:
        self.admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def add(self, *acls: AclBinding) -> None:
        for future in self.admin.create_acls(list(acls)).values():
            future.result(WAIT_S)

    def remove(self, acl: AclBinding) -> None:
        for future in self.admin.delete_acls([as_filter(acl)]).values():
            assert future.result(WAIT_S) == [acl]


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> Iterator[BrokerProcess]:
    bootstrap = broker_factory(AUTHORIZER | {"super.users": ME})
    admin = AdminClient({"bootstrap.servers": bootstrap.bootstrap})
    admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(WAIT_S)
    Acls(bootstrap).add(allow(ResourceType.BROKER, "kafka-cluster", AclOperation.ALTER))
    bootstrap.stop()
    yield broker_factory(AUTHORIZER)


def producer(broker: BrokerProcess) -> Producer:
    return Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-orders", "linger.ms": 5})


def consumer(broker: BrokerProcess) -> Consumer:
    return Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "billing", "isolation.level": "read_committed",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})


def produce_in_transaction(p: Producer, values: list[bytes], commit: bool) -> list[KafkaError | None]:
    """Delivery errors of the values sent in one transaction, then commit or abort it."""
    errors: list[KafkaError | None] = []
    p.begin_transaction()
    for value in values:
        p.produce("orders", value=value, on_delivery=lambda err, _msg: errors.append(err))
    p.flush(WAIT_S)
    if commit:
        p.commit_transaction(WAIT_S)
    else:
        p.abort_transaction(WAIT_S)
    return errors


def read_committed(broker: BrokerProcess, expected: int) -> list[bytes]:
    c = consumer(broker)
    c.subscribe(["orders"])
    got: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    try:
        while len(got) < expected and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                raise KafkaException(m.error())
            got.append(m.value())
        if got:
            c.commit(asynchronous=False)
    finally:
        c.close()
    return got


def error_of(call: object) -> KafkaError:
    with pytest.raises(KafkaException) as caught:
        call()  # type: ignore[operator]
    error: KafkaError = caught.value.args[0]
    return error


def test_allowed_end_to_end_and_each_missing_acl_gives_its_error(broker: BrokerProcess) -> None:
    acls = Acls(broker)
    acls.add(*GRANTS)
    p = producer(broker)
    p.init_transactions(WAIT_S)
    assert produce_in_transaction(p, [b"a1", b"a2"], commit=True) == [None, None]
    assert produce_in_transaction(p, [b"x"], commit=False) == [None]
    assert produce_in_transaction(p, [b"a3"], commit=True) == [None]
    assert read_committed(broker, 3) == [b"a1", b"a2", b"a3"]

    acls.remove(WRITE_TOPIC)  # the producer may not write to the topic any more
    p.begin_transaction()
    p.produce("orders", value=b"refused")
    assert error_of(lambda: p.commit_transaction(WAIT_S)).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # No partition was added, so the coordinator has no transaction to abort; librdkafka sends EndTxn
    # anyway and turns the broker's INVALID_TXN_STATE fatal (as against Kafka): start over.
    acls.add(WRITE_TOPIC)
    p = producer(broker)
    p.init_transactions(WAIT_S)

    acls.remove(READ_GROUP)  # neither the consumer nor the producer's offset commit may use the group
    c = consumer(broker)
    p.begin_transaction()
    refused = error_of(lambda: p.send_offsets_to_transaction([TopicPartition("orders", 0, 3)],
                                                             c.consumer_group_metadata(), WAIT_S))
    assert refused.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    p.abort_transaction(WAIT_S)
    c.subscribe(["orders"])
    m = c.poll(WAIT_S)
    assert m is not None and m.error() is not None and m.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    c.close()
    acls.add(READ_GROUP)

    acls.remove(READ_TOPIC)  # the consumer may not read the topic
    c = consumer(broker)
    c.assign([TopicPartition("orders", 0, 0)])
    m = c.poll(WAIT_S)
    assert m is not None and m.error() is not None and m.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    c.close()
    acls.add(READ_TOPIC)

    acls.remove(WRITE_TXN)  # a new producer may not take the transactional id (nor fence its holder)
    refused = error_of(lambda: producer(broker).init_transactions(WAIT_S))
    assert refused.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert "Principal User:ANONYMOUS is not authorized to DESCRIBE TRANSACTIONAL_ID 'tx-orders'" in refused.str()
    acls.add(WRITE_TXN)
    assert visible(broker) == [b"a1", b"a2", b"a3"]  # nothing refused above became visible


def visible(broker: BrokerProcess) -> list[bytes]:
    """Every committed value of the topic, read from the start to its end (group billing)."""
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "billing", "isolation.level": "read_committed",
                  "enable.partition.eof": True, "enable.auto.commit": False})
    c.assign([TopicPartition("orders", 0, 0)])
    got: list[bytes] = []
    try:
        while (m := c.poll(WAIT_S)) is not None:
            if m.error() is not None:
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                return got
            got.append(m.value())
    finally:
        c.close()
    raise AssertionError(f"no end of partition within {WAIT_S} s after {got}")


def test_idempotent_producing_needs_write_on_some_topic(broker: BrokerProcess) -> None:
    """Kafka 3+: IDEMPOTENT_WRITE on the CLUSTER, or WRITE on any topic, lets InitProducerId through."""
    acls = Acls(broker)
    acls.add(allow(ResourceType.TOPIC, "orders", AclOperation.DESCRIBE))
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 5})
    p.produce("orders", value=b"v")
    refused = error_of(lambda: p.flush(WAIT_S))  # librdkafka raises the fatal error
    assert (refused.code(), refused.fatal()) == (KafkaError.CLUSTER_AUTHORIZATION_FAILED, True)

    acls.add(allow(ResourceType.TOPIC, "other", AclOperation.WRITE))
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 5})
    errors: list[KafkaError | None] = []
    p.produce("orders", value=b"v", on_delivery=lambda err, _msg: errors.append(err))
    p.flush(WAIT_S)
    # a producer id now, but no WRITE on this topic
    assert [e.code() for e in errors if e is not None] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
