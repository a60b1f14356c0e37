"""The transaction API handlers in process: requests built per version, real coordinator and
partition logs under tmp_path, responses encoded as they would go on the wire."""

from __future__ import annotations

from contextlib import asynccontextmanager

import pytest

from broker.config import BrokerConfig
from broker.dispatch import HANDLERS
from broker.handler import RequestContext
from broker.principal import LOCAL_ANONYMOUS
from broker.services import transaction_coordinator
from broker.state import BrokerState
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import RequestHeader, request_schema
from protocol.errors import ErrorCode
from storage.log_manager import LogManager
from storage.producer_id_blocks import LocalProducerIdBlocks
from tests.broker.local_view import local_view
from tests.broker.test_admin_handlers import entity
from tests.request_samples import as_handled

E = ErrorCode


@asynccontextmanager
async def txn_state(tmp_path):  # type: ignore[no-untyped-def]
    config = BrokerConfig(log_dirs=str(tmp_path), transaction_state_log_num_partitions=3)
    logs = LogManager(tmp_path, {})
    logs.load()
    logs.start()
    await logs.create_topic("t", 2)
    state = BrokerState(config=config, logs=logs, handlers=HANDLERS,
                        producer_id_blocks=LocalProducerIdBlocks(tmp_path), cluster=local_view(logs, config))
    coordinator = transaction_coordinator(state)
    await coordinator.start()
    yield state
    await coordinator.stop()
    await logs.close()


@pytest.fixture
async def state(tmp_path):  # type: ignore[no-untyped-def]
    async with txn_state(tmp_path) as s:
        yield s


async def call(state, key: ApiKey, version: int, **fields):  # type: ignore[no-untyped-def]
    request = as_handled(build(request_schema(key, version), fields))
    header = RequestHeader(api_key=key, api_version=version, correlation_id=7, client_id="test")
    ctx = RequestContext(header=header, broker=state, peer="test", session=LOCAL_ANONYMOUS)
    return entity(await HANDLERS[key].handle(ctx, request), key, version)


async def init(state, txn_id="tx", version=4, timeout=60000, **kw):  # type: ignore[no-untyped-def]
    return await call(state, ApiKey.INIT_PRODUCER_ID, version, transactional_id=txn_id,
                      transaction_timeout=timeout, **kw)


async def add(state, pid, epoch, topics, version=3, txn_id="tx"):  # type: ignore[no-untyped-def]
    r = await call(state, ApiKey.ADD_PARTITIONS_TO_TXN, version, v3_and_below_transactional_id=txn_id,
                   v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                   v3_and_below_topics=[{"name": t, "partitions": ps} for t, ps in topics.items()])
    return {(t.name, p.partition_index): p.partition_error_code
            for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}


async def end(state, pid, epoch, commit=True, version=3, txn_id="tx"):  # type: ignore[no-untyped-def]
    r = await call(state, ApiKey.END_TXN, version, transactional_id=txn_id, producer_id=pid,
                   producer_epoch=epoch, committed=commit)
    return r.error_code


async def test_idempotent_init_producer_id_gives_distinct_ids(state):
    a = await init(state, txn_id=None, version=0)
    b = await init(state, txn_id=None, version=5)
    assert (a.error_code, b.error_code) == (E.none, E.none)
    assert a.producer_id != b.producer_id and a.producer_epoch == b.producer_epoch == 0


@pytest.mark.parametrize(("version", "code"), [(0, E.invalid_producer_epoch), (1, E.invalid_producer_epoch),
                                               (2, E.producer_fenced), (4, E.producer_fenced)])
async def test_end_txn_with_a_stale_epoch_by_version(state, version, code):
    r = await init(state)
    await init(state)  # epoch 1
    assert await add(state, r.producer_id, 1, {"t": [0]}) == {("t", 0): E.none}
    assert await end(state, r.producer_id, 0, version=version) == code


@pytest.mark.parametrize(("version", "code"), [(3, E.invalid_producer_epoch), (4, E.producer_fenced),
                                               (5, E.producer_fenced)])
async def test_init_producer_id_kip360_with_a_stale_epoch_by_version(state, version, code):
    r = await init(state)
    await init(state)
    await init(state)  # epoch 2; the last epoch is forgotten by a plain re-init
    stale = await init(state, version=version, producer_id=r.producer_id, producer_epoch=0)
    assert (stale.error_code, stale.producer_id) == (code, -1)


async def test_init_producer_id_with_half_a_producer_is_invalid_request(state):
    assert (await init(state, version=4, producer_id=5)).error_code is E.invalid_request


async def test_init_producer_id_timeout_over_the_maximum(state):
    assert (await init(state, timeout=900_001)).error_code is E.invalid_transaction_timeout


async def test_add_partitions_for_unknown_topics(state):
    r = await init(state)
    codes = await add(state, r.producer_id, r.producer_epoch, {"t": [0, 9], "nope": [0]})
    assert codes == {("t", 0): E.operation_not_attempted, ("t", 9): E.unknown_topic_or_partition,
                     ("nope", 0): E.unknown_topic_or_partition}
    assert await end(state, r.producer_id, r.producer_epoch) is E.invalid_txn_state  # nothing added


@pytest.mark.parametrize("version", [0, 2, 3])
async def test_add_partitions_with_wrong_producer_id(state, version):
    r = await init(state)
    codes = await add(state, r.producer_id + 1, r.producer_epoch, {"t": [0, 1]}, version=version)
    assert set(codes.values()) == {E.invalid_producer_id_mapping}


async def test_end_txn_without_a_transaction_and_for_unknown_ids(state):
    r = await init(state)
    assert await end(state, r.producer_id, r.producer_epoch) is E.invalid_txn_state
    assert await end(state, r.producer_id, r.producer_epoch, txn_id="ghost") is E.invalid_producer_id_mapping


async def test_add_offsets_then_commit_and_retry(state):
    r = await init(state)
    a = await call(state, ApiKey.ADD_OFFSETS_TO_TXN, 3, transactional_id="tx", producer_id=r.producer_id,
                   producer_epoch=r.producer_epoch, group_id="g")
    assert a.error_code is E.none
    assert await end(state, r.producer_id, r.producer_epoch, version=1) is E.none
    await state.txn_coordinator.quiesce()
    assert await end(state, r.producer_id, r.producer_epoch, version=1) is E.none  # retry
    assert await end(state, r.producer_id, r.producer_epoch, commit=False) is E.invalid_txn_state


async def test_describe_and_list_transactions(state):
    r = await init(state, txn_id="seen")
    await add(state, r.producer_id, r.producer_epoch, {"t": [1]}, txn_id="seen")
    d = await call(state, ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=["seen", "unseen"])
    seen, unseen = d.transaction_states
    assert (seen.error_code, seen.transaction_state, seen.producer_id) == (E.none, "Ongoing", r.producer_id)
    assert [(t.topic, list(t.partitions)) for t in seen.topics] == [("t", [1])]
    assert unseen.error_code is E.transactional_id_not_found
    ls = await call(state, ApiKey.LIST_TRANSACTIONS, 1, state_filters=["Ongoing", "Sleeping"],
                    producer_id_filters=[], duration_filter=-1)
    assert [t.transactional_id for t in ls.transaction_states] == ["seen"]
    assert list(ls.unknown_state_filters) == ["Sleeping"]


async def test_describe_producers_shows_the_open_transaction(state):
    from protocol.records import Record, build_batch

    r = await init(state)
    await add(state, r.producer_id, r.producer_epoch, {"t": [0]})
    plog = state.logs.get_log(("t", 0))
    batch = build_batch([Record(value=b"x")], producer_id=r.producer_id, producer_epoch=0, base_sequence=0,
                        transactional=True)
    await plog.append(bytes(batch))
    d = await call(state, ApiKey.DESCRIBE_PRODUCERS, 0, topics=[{"name": "t", "partition_indexes": [0, 1]}])
    p0, p1 = d.topics[0].partitions
    [producer] = p0.active_producers
    assert (producer.producer_id, producer.current_txn_start_offset, producer.last_sequence) == (r.producer_id, 0, 0)
    assert p1.active_producers == ()


async def produce(state, txn_id, pid, epoch, partition, seq=0):  # type: ignore[no-untyped-def]
    from protocol.records import Record, build_batch

    batch = bytes(build_batch([Record(value=b"x")], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                              transactional=True))
    r = await call(state, ApiKey.PRODUCE, 9, transactional_id=txn_id, acks=-1, timeout=1000,
                   topic_data=[{"name": "t", "partition_data": [{"index": partition, "records": batch}]}])
    [part] = r.responses[0].partition_responses
    return part.error_code, part.error_message


async def test_transactional_produce_to_a_partition_not_in_the_transaction(state):
    r = await init(state)
    await add(state, r.producer_id, r.producer_epoch, {"t": [0]})
    assert (await produce(state, "tx", r.producer_id, 0, 0))[0] is E.none
    code, message = await produce(state, "tx", r.producer_id, 0, 1)
    assert code is E.invalid_txn_state and "t-1 is not in the transaction of 'tx'" in message
    assert state.logs.get_log(("t", 1)).log_end_offset == 0  # nothing was written there
    code, _ = await produce(state, "tx", r.producer_id, 0, 0, seq=1)  # the open one continues
    assert code is E.none


class Group:
    """The group coordinator's side of TxnOffsetCommit, as its actor exposes it."""

    def __init__(self):
        self.calls = []

    async def commit_offsets(self, group_id, offsets, *, member_id, generation_id, group_instance_id, producer,
                             api_version):
        plain = {tp: (o.committed_offset, o.committed_leader_epoch, o.metadata) for tp, o in offsets.items()}
        self.calls.append((group_id, producer.producer_id, producer.epoch, generation_id, member_id,
                           group_instance_id, plain))
        return dict.fromkeys(offsets, E.none)


def txn_offsets(version, **extra):  # type: ignore[no-untyped-def]
    return dict(transactional_id="tx", group_id="g", producer_id=5, producer_epoch=1,
                topics=[{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 42,
                                                      "committed_leader_epoch": 3, "committed_metadata": "m"}]}],
                **extra)


async def test_txn_offset_commit_without_group_coordinator(state):
    r = await call(state, ApiKey.TXN_OFFSET_COMMIT, 0, **txn_offsets(0))
    assert r.topics[0].partitions[0].error_code is E.coordinator_not_available


async def test_txn_offset_commit_hands_kip447_fields_to_the_group_coordinator(state):
    state.group_coordinator = group = Group()
    r = await call(state, ApiKey.TXN_OFFSET_COMMIT, 3,
                   **txn_offsets(3, generation_id=7, member_id="m-1", group_instance_id=None))
    assert r.topics[0].partitions[0].error_code is E.none
    assert group.calls == [("g", 5, 1, 7, "m-1", None, {("t", 0): (42, 3, "m")})]
    await call(state, ApiKey.TXN_OFFSET_COMMIT, 0, **txn_offsets(0))
    assert group.calls[-1][3:5] == (-1, "")  # v0-2 carry no generation or member


async def test_txn_offset_commit_to_unknown_partitions_is_refused_as_offset_commit_refuses_it(state):
    state.group_coordinator = group = Group()
    request = txn_offsets(3)
    request["topics"] += [{"name": "t", "partitions": [{"partition_index": 9, "committed_offset": 1,
                                                        "committed_leader_epoch": -1, "committed_metadata": ""}]},
                          {"name": "gone", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                           "committed_leader_epoch": -1, "committed_metadata": ""}]}]
    r = await call(state, ApiKey.TXN_OFFSET_COMMIT, 3, **request)
    codes = [(t.name, p.partition_index, p.error_code) for t in r.topics for p in t.partitions]
    assert codes == [("t", 0, E.none), ("t", 9, E.unknown_topic_or_partition),
                     ("gone", 0, E.unknown_topic_or_partition)]
    assert [list(c[-1]) for c in group.calls] == [[("t", 0)]]


@pytest.mark.parametrize(("version", "code"), [(3, E.invalid_txn_state), (4, E.transaction_abortable)])
async def test_txn_offset_commit_before_add_offsets_to_txn_writes_nothing(state, version, code):
    # KIP-890 part 1, as Kafka's group coordinator verifies: offsets written for a group the
    # transaction does not hold would open a transaction in __consumer_offsets that no marker
    # closes; v4 knows TRANSACTION_ABORTABLE, so the client aborts and carries on
    state.group_coordinator = group = Group()
    r = await init(state)
    await add(state, r.producer_id, r.producer_epoch, {"t": [0]})
    fields = txn_offsets(version) | {"producer_id": r.producer_id, "producer_epoch": r.producer_epoch}
    t = await call(state, ApiKey.TXN_OFFSET_COMMIT, version, **fields)
    assert t.topics[0].partitions[0].error_code is code and group.calls == []
    a = await call(state, ApiKey.ADD_OFFSETS_TO_TXN, 3, transactional_id="tx", producer_id=r.producer_id,
                   producer_epoch=r.producer_epoch, group_id="g")
    assert a.error_code is E.none
    t = await call(state, ApiKey.TXN_OFFSET_COMMIT, version, **fields)
    assert t.topics[0].partitions[0].error_code is E.none and len(group.calls) == 1
