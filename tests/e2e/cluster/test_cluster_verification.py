"""KIP-890 part 1 across brokers (issue 14): a Transactions V1 Produce (v11) whose transactional
batch would open a transaction on a partition the transaction does not hold is verified with the
transaction's coordinator on another broker (AddPartitionsToTxn v5 verify_only, as Kafka's partition
leaders send it) and refused with TRANSACTION_ABORTABLE; once added, the same batch is written."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.produce.v11.request import PartitionProduceData, ProduceRequest, TopicProduceData

from protocol.records import Record, build_batch
from tests.e2e.cluster.conftest import Cluster, wait_until
from tests.e2e.cluster.test_failover import create_topic
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e


def produce_v11(bootstrap: str, txn_id: str, topic: str, partition: int, pid: int, epoch: int) -> ErrorCode:
    batch = bytes(build_batch([Record(value=b"x")], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                              transactional=True))
    with RawClient(bootstrap) as client:
        r = client.request(ProduceRequest(transactional_id=txn_id, acks=-1, timeout=datetime.timedelta(seconds=10),
                                          topic_data=(TopicProduceData(name=topic, partition_data=(
                                              PartitionProduceData(index=partition, records=batch),)),)))
    return ErrorCode(r.responses[0].partition_responses[0].error_code)


def test_v1_produce_is_verified_with_a_coordinator_on_another_broker(cluster: Cluster) -> None:
    cluster.start(1, 2)
    create_topic(cluster, "vr", 4)
    leaders = cluster.settled("vr")
    with RawClient(cluster.brokers[1].bootstrap) as client:
        found = client.request(FindCoordinatorRequest(key_type=1, coordinator_keys=("vr-tx",)))
    coordinator = found.coordinators[0].node_id
    partition = next(p for p, (leader, _) in leaders.items() if leader != coordinator)
    leader = leaders[partition][0]
    with RawClient(cluster.brokers[coordinator].bootstrap) as client:
        inits: list[Any] = []
        wait_until(lambda: inits.append(client.request(InitProducerIdRequest(
            transactional_id="vr-tx", transaction_timeout=datetime.timedelta(seconds=60)))) or
            inits[-1].error_code == ErrorCode.none, "InitProducerId once the shard is loaded")
        init = inits[-1]
        pid, epoch = init.producer_id, init.producer_epoch
        # a partition never added: no transaction may open there
        assert produce_v11(cluster.brokers[leader].bootstrap, "vr-tx", "vr", partition, pid, epoch) \
            is ErrorCode.transaction_abortable
        added = client.request(AddPartitionsToTxnRequest(
            v3_and_below_transactional_id="vr-tx", v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=(AddPartitionsToTxnTopic(name="vr", partitions=(partition,)),)))
        assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == ErrorCode.none
    assert produce_v11(cluster.brokers[leader].bootstrap, "vr-tx", "vr", partition, pid, epoch) is ErrorCode.none
