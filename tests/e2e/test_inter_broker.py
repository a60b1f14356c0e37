"""The inter-broker client (broker/inter_broker.py) against a real broker process: a transaction
coordinator's WriteTxnMarkers reaches the partition's leader and ends the open transaction there,
as the coordinator of another broker sends it in cluster mode; markers sent at once to one broker
travel as one request."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from broker.config import build_config
from broker.inter_broker import InterBrokerClient, TxnMarkerChannel
from broker.security.inter_broker_auth import build_inter_broker_security
from coordinator.transaction.txn_markers import TxnMarkerEntry
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import request_schema
from protocol.errors import ErrorCode, KafkaError
from storage.api import BrokerEndpoint, TopicPartition

from ..coordinator.cluster_view import StaticClusterView
from .txn_clients import create_topics, last_stable_offsets, txn_producer

pytestmark = pytest.mark.e2e
SETTINGS = {"transaction.state.log.num.partitions": "2", "offsets.topic.num.partitions": "2"}


class CountingClient(InterBrokerClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[Any] = []

    async def send(self, node_id: int, request: Any) -> Any:
        self.sent.append(request)
        return await super().send(node_id, request)


async def test_markers_sent_to_the_leader_end_its_open_transaction(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    create_topics(broker.bootstrap, ["t"], 3)
    producer = txn_producer(broker.bootstrap, "tx")
    producer.begin_transaction()
    for i in range(6):
        producer.produce("t", value=b"%d" % i, partition=i % 3)
    producer.flush(30)
    view = StaticClusterView(9)
    view.brokers = [BrokerEndpoint(1, "127.0.0.1", broker.port)]
    client = CountingClient(view, client_id="eosbroker-9", request_timeout_ms=30000)
    try:
        described = await client.send(1, build(request_schema(ApiKey.DESCRIBE_TRANSACTIONS, 0),
                                               {"transactional_ids": ["tx"]}))
        [state] = described.transaction_states
        assert state.transaction_state == "Ongoing"
        channel = TxnMarkerChannel(client)
        results = await asyncio.gather(*(channel.write_txn_markers(1, TxnMarkerEntry(
            producer_id=state.producer_id, producer_epoch=state.producer_epoch, coordinator_epoch=0, commit=False,
            partitions=(TopicPartition("t", p),))) for p in range(3)))
        assert results == [{TopicPartition("t", p): ErrorCode.none} for p in range(3)]
        [request] = client.sent[1:]  # the three partitions' markers went as one request
        assert [t.partition_indexes for t in request.markers[0].topics] == [(0, 1, 2)]
        again = await asyncio.gather(*(client.send(1, request) for _ in range(2)))  # pipelined on one connection
        assert [len(r.markers) for r in again] == [1, 1]
    finally:
        await client.close()
    assert last_stable_offsets(broker.bootstrap, "t", 3) == {0: 5, 1: 5, 2: 5}  # 2 records and 3 markers each
    producer.abort_transaction(30)


async def test_the_client_logs_in_over_mtls_as_its_certificates_subject(broker_factory, tls_files) -> None:  # type: ignore[no-untyped-def]
    """inter.broker.listener.name on an SSL listener that requires client certificates: the key
    store is the client certificate, so the peer sees the broker's subject as its principal
    (which needs CLUSTER_ACTION: super.users here); without a certificate the login fails."""
    tls = tls_files.broker_settings(client_auth="required")
    broker = broker_factory(SETTINGS | tls | {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "super.users": "User:ANONYMOUS;User:CN=localhost",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    create_topics(broker.bootstrap, ["t"], 1)
    ssl_port = broker.listener_ports["SSL"]
    view = StaticClusterView(9)
    view.brokers = [BrokerEndpoint(1, "127.0.0.1", broker.port, None,
                                   (("PLAINTEXT", "127.0.0.1", broker.port), ("SSL", "127.0.0.1", ssl_port)))]
    props = {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "inter.broker.listener.name": "SSL"}
    security = build_inter_broker_security(build_config(props | tls)[0])
    client = InterBrokerClient(view, client_id="eosbroker-9", request_timeout_ms=30000, security=security)
    try:
        marker = TxnMarkerEntry(producer_id=4242, producer_epoch=0, coordinator_epoch=0, commit=False,
                                partitions=(TopicPartition("t", 0),))
        results = await TxnMarkerChannel(client).write_txn_markers(1, marker)
        assert results == {TopicPartition("t", 0): ErrorCode.none}
    finally:
        await client.close()
    assert broker.wait_for_log(r"WriteTxnMarkers from User:CN=localhost on listener SSL \(SSL\)")
    no_certificate = {k: v for k, v in tls.items() if not k.startswith(("ssl.keystore", "ssl.key."))}
    refused = InterBrokerClient(view, client_id="eosbroker-9", request_timeout_ms=30000,
                                security=build_inter_broker_security(build_config(props | no_certificate)[0]))
    try:
        with pytest.raises(KafkaError) as caught:
            await refused.send(1, build(request_schema(ApiKey.DESCRIBE_TRANSACTIONS, 0), {"transactional_ids": ["x"]}))
        assert caught.value.code is ErrorCode.network_exception  # retriable: fixed configuration, next attempt
    finally:
        await refused.close()


async def test_a_sasl_session_that_ends_is_replaced_by_a_fresh_login(broker_factory) -> None:  # type: ignore[no-untyped-def]
    """connections.max.reauth.ms on the peer (KIP-368): the peer closes a connection whose session
    has ended at its next request, so the client logs in on a new connection before that."""
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
            'password="broker-secret" user_broker="broker-secret";')
    props = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
             "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas}
    broker = broker_factory(SETTINGS | props | {"connections.max.reauth.ms": "1500"})
    sasl_port = broker.listener_ports["SASL_PLAINTEXT"]
    view = StaticClusterView(9)
    view.brokers = [BrokerEndpoint(1, "127.0.0.1", broker.port, None, (("SASL_PLAINTEXT", "127.0.0.1", sasl_port),))]
    security = build_inter_broker_security(build_config(props | {
        "inter.broker.listener.name": "SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol": "PLAIN"})[0])
    client = CountingClient(view, client_id="eosbroker-9", request_timeout_ms=30000, security=security)
    request = build(request_schema(ApiKey.LIST_GROUPS, 4), {"states_filter": []})
    try:
        await client.send(1, request)
        first = client._connections[1]
        assert first.expires_at is not None  # 80 % of the 1.5 s the peer gave
        await asyncio.sleep(1.6)  # past the session's end: the old connection would be closed on use
        await client.send(1, request)
        assert client._connections[1] is not first and first.closed
    finally:
        await client.close()
