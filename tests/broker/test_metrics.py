"""The metrics collector and endpoint in process: real partition logs under tmp_path, the scrape
parsed with prometheus_client's own parser, the endpoint spoken to over a loopback socket."""

from __future__ import annotations

import asyncio
import socket

import pytest
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from broker.metrics.collector import BrokerCollector
from broker.metrics.counters import BrokerMetrics, request_name
from broker.metrics.http import MetricsServer
from coordinator.transaction.outcomes import AbortCause, TxnOutcomes
from protocol.api_keys import ApiKey
from protocol.records import Record, build_batch
from storage.api import TopicPartition

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(registry: CollectorRegistry) -> Samples:
    text = generate_latest(registry).decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def collector_registry(state, metrics: BrokerMetrics, connections: int = 0) -> CollectorRegistry:  # type: ignore[no-untyped-def]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(state, metrics, lambda: {("PLAINTEXT", "PLAINTEXT"): connections,
                                                               ("CLIENT", "SASL_SSL"): 1}, clock=lambda: 10_000))
    return registry


def test_request_names_are_kafkas() -> None:
    assert request_name(ApiKey.END_TXN) == "EndTxn"
    assert request_name(ApiKey.INIT_PRODUCER_ID) == "InitProducerId"
    assert request_name(ApiKey.OFFSET_FOR_LEADER_EPOCH) == "OffsetForLeaderEpoch"
    assert request_name(999) == "ApiKey999"


async def test_topic_counters_and_all_topics_totals(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state(a=2, b=1)
    metrics = BrokerMetrics()
    metrics.topic("a").bytes_in += 100
    metrics.topic("a").messages_in += 4
    metrics.topic("b").bytes_in += 30
    metrics.topic("b").bytes_out += 7
    samples = scrape(collector_registry(state, metrics, connections=3))
    assert value(samples, "kafka_server_brokertopicmetrics_bytesin_total", topic="a") == 100
    assert value(samples, "kafka_server_brokertopicmetrics_bytesin_total", topic="b") == 30
    assert value(samples, "kafka_server_brokertopicmetrics_bytesin_total") == 130  # the all-topics MBean
    assert value(samples, "kafka_server_brokertopicmetrics_messagesin_total") == 4
    assert value(samples, "kafka_server_brokertopicmetrics_bytesout_total", topic="b") == 7
    assert value(samples, "kafka_server_replicamanager_partitioncount") == 3
    assert value(samples, "kafka_log_log_size", topic="a", partition="1") == 0
    assert value(samples, "eosbroker_partition_last_stable_offset_lag", topic="b", partition="0") == 0
    assert value(samples, "kafka_server_socket_server_metrics_connection_count", listener="PLAINTEXT",
                 security_protocol="PLAINTEXT", networkprocessor="0") == 3
    assert value(samples, "kafka_server_socket_server_metrics_connection_count", listener="CLIENT",
                 security_protocol="SASL_SSL", networkprocessor="0") == 1
    # No coordinators yet (the endpoint serves while they load): zeros, not a failed scrape.
    assert value(samples, "kafka_coordinator_group_groupmetadatamanager_numgroupsstable") == 0
    assert value(samples, "eosbroker_transactions_ongoing") == 0


async def test_a_deleted_topic_leaves_its_series_but_not_the_totals(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state(a=1, b=1)
    metrics = BrokerMetrics()
    metrics.topic("a").messages_in += 2
    metrics.topic("b").messages_in += 5
    registry = collector_registry(state, metrics)
    scrape(registry)
    await state.logs.delete_topic("b")
    samples = scrape(registry)
    assert ("kafka_server_brokertopicmetrics_messagesin_total", frozenset({("topic", "b")})) not in samples
    assert value(samples, "kafka_server_brokertopicmetrics_messagesin_total") == 7
    assert value(samples, "kafka_server_replicamanager_partitioncount") == 1


async def test_request_histogram_is_cumulative_in_ms(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state()
    metrics = BrokerMetrics()
    metrics.request(ApiKey.PRODUCE).observe(9, 0.0004)
    metrics.request(ApiKey.PRODUCE).observe(9, 0.003)
    metrics.request(ApiKey.PRODUCE).observe(7, 60.0)
    samples = scrape(collector_registry(state, metrics))
    assert value(samples, "kafka_network_requestmetrics_requests_total", request="Produce", version="9") == 2
    assert value(samples, "kafka_network_requestmetrics_requests_total", request="Produce", version="7") == 1
    bucket = "kafka_network_requestmetrics_totaltimems_bucket"
    assert value(samples, bucket, request="Produce", le="0.5") == 1
    assert value(samples, bucket, request="Produce", le="5.0") == 2
    assert value(samples, bucket, request="Produce", le="30000.0") == 2
    assert value(samples, bucket, request="Produce", le="+Inf") == 3
    assert value(samples, "kafka_network_requestmetrics_totaltimems_count", request="Produce") == 3
    assert value(samples, "kafka_network_requestmetrics_totaltimems_sum", request="Produce") == pytest.approx(60003.4)


def test_outcomes_count_by_cause() -> None:
    outcomes = TxnOutcomes()
    outcomes.record(True)
    outcomes.record(False)
    outcomes.record(False, AbortCause.TIMEOUT)
    outcomes.record(False, AbortCause.TIMEOUT)
    assert outcomes.committed == 1
    assert outcomes.aborted == {AbortCause.CLIENT: 1, AbortCause.TIMEOUT: 2, AbortCause.FENCING: 0,
                                AbortCause.ADMIN: 0}


async def http_get(port: int, request: bytes) -> tuple[int, bytes, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    data = await reader.read()
    writer.close()
    await writer.wait_closed()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), head, body


async def test_endpoint_routes_and_readiness(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state(a=1)
    ready = False
    server = MetricsServer(collector_registry(state, BrokerMetrics()), lambda: ready)
    sock = socket.create_server(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    await server.start(sock)
    try:
        assert (await http_get(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))[0] == 200
        assert (await http_get(port, b"GET /readyz HTTP/1.1\r\n\r\n"))[0] == 503
        ready = True
        assert (await http_get(port, b"GET /readyz HTTP/1.1\r\n\r\n"))[0] == 200
        status, head, body = await http_get(port, b"GET /metrics?x=1 HTTP/1.1\r\n\r\n")
        assert status == 200 and b"text/plain; version=" in head
        assert b'kafka_log_log_size{partition="0",topic="a"} 0.0' in body
        status, head, body = await http_get(port, b"HEAD /metrics HTTP/1.1\r\n\r\n")
        assert status == 200 and body == b"" and b"Content-Length: 0" not in head
        assert (await http_get(port, b"POST /metrics HTTP/1.1\r\n\r\n"))[0] == 405
        assert (await http_get(port, b"GET /other HTTP/1.1\r\n\r\n"))[0] == 404
        assert (await http_get(port, b"nonsense\r\n\r\n"))[0] == 400
    finally:
        await server.stop()


async def test_issue_11_a_hanging_transaction_has_an_age_and_a_lag(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state(h=1)  # no transaction coordinator: the producer is unknown to it
    plog = state.logs.get_log(TopicPartition("h", 0))
    await plog.append(bytes(build_batch([Record(key=None, value=b"v", timestamp=1)] * 2, producer_id=77,
                                        producer_epoch=0, base_sequence=0, transactional=True)))
    [txn] = plog.open_transactions()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(state, BrokerMetrics(), lambda: {}, clock=lambda: txn.start_timestamp + 4_500))
    samples = scrape(registry)
    assert value(samples, "eosbroker_partition_oldest_open_transaction_age_seconds", topic="h", partition="0") == 4.5
    assert value(samples, "eosbroker_partition_last_stable_offset_lag", topic="h", partition="0") == 2
