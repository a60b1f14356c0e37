"""FindCoordinator in cluster mode: the key's shard leader from the ClusterView (docs/cluster.md),
COORDINATOR_NOT_AVAILABLE while no live broker leads the shard; a single node answers itself.
DescribeTransactions of an id coordinated elsewhere: NOT_COORDINATOR."""

from __future__ import annotations

from typing import Any

from broker.dispatch import HANDLERS
from broker.handler import RequestContext
from broker.principal import LOCAL_ANONYMOUS
from broker.services import group_coordinator, transaction_coordinator
from coordinator.transaction.coordinator import TransactionCoordinator, TxnCoordinatorConfig
from coordinator.transaction.log import TRANSACTION_STATE_TOPIC
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import RequestHeader, encode_response, request_schema
from protocol.errors import ErrorCode
from storage.api import PartitionLeader, TopicPartition
from storage.producer_id_blocks import LocalProducerIdBlocks

from ..coordinator.cluster_view import StaticClusterView


async def find(state: Any, key_type: int, *keys: str) -> list[tuple[str, int, str, int, ErrorCode]]:
    request = build(request_schema(ApiKey.FIND_COORDINATOR, 4), {"key_type": key_type, "coordinator_keys": keys})
    header = RequestHeader(api_key=ApiKey.FIND_COORDINATOR, api_version=4, correlation_id=1, client_id="t")
    response = await HANDLERS[ApiKey.FIND_COORDINATOR].handle(RequestContext(header=header, broker=state, peer="t",
                                                                            session=LOCAL_ANONYMOUS),
                                                            request)
    assert encode_response(1, response)
    return [(c.key, c.node_id, c.host, c.port, c.error_code) for c in response.coordinators]


async def test_the_shard_leader_is_the_coordinator(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state()
    view = StaticClusterView(1)
    state.cluster = view
    groups, txns = group_coordinator(state), transaction_coordinator(state)
    await groups.start()
    await txns.start()
    try:
        view.leaders[groups.partition_for("g")] = PartitionLeader(3, 7)
        view.leaders[TopicPartition(TRANSACTION_STATE_TOPIC, txns.partition_for("tx"))] = PartitionLeader(2, 1)
        assert await find(state, 0, "g") == [("g", 3, "127.0.0.1", 9003, ErrorCode.none)]
        assert await find(state, 1, "tx") == [("tx", 2, "127.0.0.1", 9002, ErrorCode.none)]
        view.leaders[groups.partition_for("g")] = PartitionLeader(-1, 7)  # its leader's lease lapsed
        [(_, node, _, _, code)] = await find(state, 0, "g")
        assert (node, code) == (-1, ErrorCode.coordinator_not_available)
        view.brokers.pop()  # broker 3 is gone but still named leader: not available either
        view.leaders[groups.partition_for("g")] = PartitionLeader(3, 7)
        [(_, node, _, _, code)] = await find(state, 0, "g")
        assert (node, code) == (-1, ErrorCode.coordinator_not_available)
    finally:
        await txns.stop()
        await groups.stop()


async def test_a_single_node_coordinates_everything(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state()
    groups, txns = group_coordinator(state), transaction_coordinator(state)
    await groups.start()
    await txns.start()
    try:
        host, port = state.config.advertised
        assert await find(state, 0, "g") == [("g", state.node_id, host, port, ErrorCode.none)]
        assert await find(state, 1, "tx") == [("tx", state.node_id, host, port, ErrorCode.none)]
    finally:
        await txns.stop()
        await groups.stop()


async def describe(state: Any, txn_id: str) -> ErrorCode:
    request = build(request_schema(ApiKey.DESCRIBE_TRANSACTIONS, 0), {"transactional_ids": [txn_id]})
    header = RequestHeader(api_key=ApiKey.DESCRIBE_TRANSACTIONS, api_version=0, correlation_id=1, client_id="t")
    response = await HANDLERS[ApiKey.DESCRIBE_TRANSACTIONS].handle(
        RequestContext(header=header, broker=state, peer="t", session=LOCAL_ANONYMOUS), request)
    [entry] = response.transaction_states
    return ErrorCode(entry.error_code)


async def test_describe_transactions_of_a_shard_served_elsewhere_is_not_coordinator(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state()
    txns = TransactionCoordinator(state.logs, TxnCoordinatorConfig(num_partitions=3), cluster=StaticClusterView(1),
                                  producer_id_blocks=LocalProducerIdBlocks(state.logs.data_dir))
    state.txn_coordinator = txns
    await txns.start()
    try:
        assert await describe(state, "tx") is ErrorCode.not_coordinator
        shard = TopicPartition(TRANSACTION_STATE_TOPIC, txns.partition_for("tx"))
        await txns.on_elected(shard, 4)
        await txns.shards.wait_loaded(shard.partition)
        assert await describe(state, "tx") is ErrorCode.transactional_id_not_found
    finally:
        await txns.stop()
