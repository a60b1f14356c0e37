"""ACL hosts compared as addresses, end to end (issue 12): a listener on [::1] serves clients and
advertises [::1] in Metadata; an ACL written `::1` or as Java writes it, `0:0:0:0:0:0:0:1`,
matches a client connected over IPv6 loopback, and no other; an IPv4 client of a dual-stack
listener (its peer address is `::ffff:127.0.0.1`) matches the ACLs written for 127.0.0.1, as
Kafka's InetAddress makes it. Every client is User:ANONYMOUS (PLAINTEXT listeners), so the host
is all that tells them apart."""

from __future__ import annotations

import socket

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
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

WAIT_S = 30.0
AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def allow(resource: ResourceType, name: str, operation: AclOperation, host: str) -> AclBinding:
    return AclBinding(resource, name, ResourcePatternType.LITERAL, "User:ANONYMOUS", host, operation,
                      AclPermissionType.ALLOW)


GRANTS = [allow(ResourceType.TOPIC, "v6", AclOperation.WRITE, "::1"),
          allow(ResourceType.TOPIC, "v6", AclOperation.READ, "0:0:0:0:0:0:0:1"),  # Java's spelling of ::1
          allow(ResourceType.GROUP, "v6-readers", AclOperation.READ, "::1"),
          allow(ResourceType.TOPIC, "v4", AclOperation.WRITE, "127.0.0.1")]


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> BrokerProcess:
    """Listeners on 127.0.0.1, on [::1] and on every interface (dual-stack: IPv4 clients arrive as
    IPv4-mapped IPv6 peers); the ACLs are granted by a super user, then the broker restarts without one."""
    port = _free_port()
    settings = {"listeners": f"PLAINTEXT://127.0.0.1:0,V6://[::1]:0,ALL://:{port}",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,V6:PLAINTEXT,ALL:PLAINTEXT",
                "advertised.listeners": f"ALL://127.0.0.1:{port}"} | AUTHORIZER
    first = broker_factory(settings | {"super.users": "User:ANONYMOUS"})
    admin = AdminClient({"bootstrap.servers": first.bootstrap})
    for future in admin.create_topics([NewTopic("v6", 1, 1), NewTopic("v4", 1, 1)]).values():
        future.result(WAIT_S)
    for future in admin.create_acls(GRANTS).values():
        future.result(WAIT_S)
    first.stop()
    return broker_factory(settings)


def v6_bootstrap(broker: BrokerProcess) -> str:
    return f"[::1]:{broker.listener_ports['V6']}"


def produce(bootstrap: str, topic: str) -> KafkaError | None:
    errors: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10000})
    producer.produce(topic, value=b"from " + bootstrap.encode(), on_delivery=lambda err, _m: errors.append(err))
    producer.flush(WAIT_S)
    assert len(errors) == 1
    return errors[0]


def test_an_ipv6_listener_and_acl_hosts_compared_as_addresses(broker: BrokerProcess) -> None:
    assert "listener V6 (PLAINTEXT) on [::1]:" in "".join(broker.log_lines)
    v6 = v6_bootstrap(broker)
    metadata = AdminClient({"bootstrap.servers": v6}).list_topics(timeout=WAIT_S)
    assert [(b.host, b.port) for b in metadata.brokers.values()] == [("::1", broker.listener_ports["V6"])]
    assert "v6" in metadata.topics and "v4" not in metadata.topics  # DESCRIBE on v4 only from 127.0.0.1

    assert produce(v6, "v6") is None
    consumer = Consumer({"bootstrap.servers": v6, "group.id": "v6-readers", "auto.offset.reset": "earliest"})
    consumer.subscribe(["v6"])
    msg = consumer.poll(WAIT_S)
    assert msg is not None and msg.error() is None and msg.value() == b"from " + v6.encode()
    consumer.close()

    refused = produce(broker.bootstrap_of("PLAINTEXT"), "v6")  # same principal, from 127.0.0.1
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    refused = produce(v6, "v4")
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_an_ipv4_client_of_a_dual_stack_listener_matches_its_ipv4_acl(broker: BrokerProcess) -> None:
    dual = broker.bootstrap_of("ALL")  # 127.0.0.1, accepted on an IPv6 socket as ::ffff:127.0.0.1
    assert produce(dual, "v4") is None
    refused = produce(dual, "v6")
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    metadata = AdminClient({"bootstrap.servers": dual}).list_topics(timeout=WAIT_S)
    assert "v4" in metadata.topics and "v6" not in metadata.topics
