from coordinator.tasks import Backoff
from coordinator.transaction.marker_writer import MarkerWriter, TxnMarker
from protocol.control import ControlRecordType, read_end_txn_marker
from protocol.errors import ErrorCode, KafkaError
from storage.api import AppendOrigin, TopicPartition

A, B = TopicPartition("a", 0), TopicPartition("b", 0)
OFFSETS = TopicPartition("__consumer_offsets", 3)
FAST = Backoff(initial_ms=1, max_ms=2)


def txn(commit, *partitions):
    return TxnMarker(transactional_id="tx", producer_id=9, producer_epoch=2, commit=commit,
                     partitions=frozenset(partitions))


class Log:
    def __init__(self, failures=()):
        self.failures = list(failures)
        self.batches = []

    async def append(self, batch, origin):
        assert origin is AppendOrigin.COORDINATOR
        if self.failures:
            raise self.failures.pop(0)
        self.batches.append(batch)


class Logs:
    def __init__(self, logs):
        self.logs = logs

    def get_log(self, tp):
        if tp not in self.logs:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"{tp} is gone")
        return self.logs[tp]


class Group:
    def __init__(self):
        self.calls = []

    def complete_txn(self, producer_id, group_ids, commit):  # a plain method works too
        self.calls.append((producer_id, group_ids, commit))


async def test_one_marker_per_partition_with_coordinator_epoch():
    logs = Logs({A: Log(), B: Log()})
    await MarkerWriter(logs, coordinator_epoch=4).write(txn(True, A, B))
    for tp in (A, B):
        [batch] = logs.logs[tp].batches
        marker = read_end_txn_marker(batch)
        assert marker.control_type is ControlRecordType.COMMIT and marker.coordinator_epoch == 4


async def test_deleted_topic_is_skipped_and_io_errors_are_retried_until_written():
    storage_error = KafkaError(ErrorCode.kafka_storage_error, "disk full")
    closing = KafkaError(ErrorCode.not_leader_or_follower, "closing")
    # More failures than the old writer's five attempts: a marker is never given up.
    logs = Logs({A: Log(failures=[OSError("disk hiccup"), closing] + [storage_error] * 8)})
    written = set()
    await MarkerWriter(logs, 0, backoff=FAST).write(txn(False, A, B), written)
    [batch] = logs.logs[A].batches
    assert read_end_txn_marker(batch).control_type is ControlRecordType.ABORT
    assert logs.logs[A].failures == [] and written == {A, B}


async def test_partitions_already_written_are_skipped():
    logs = Logs({A: Log(), B: Log()})
    await MarkerWriter(logs, 0).write(txn(True, A, B), written={A})
    assert logs.logs[A].batches == [] and len(logs.logs[B].batches) == 1


async def test_refused_marker_is_not_retried():
    log = Log(failures=[KafkaError(ErrorCode.invalid_producer_epoch, "fenced")])
    await MarkerWriter(Logs({A: log}), 0).write(txn(True, A))
    assert log.batches == []


async def test_group_hears_only_about_transactions_with_offsets():
    group = Group()
    writer = MarkerWriter(Logs({A: Log(), OFFSETS: Log()}), 0, lambda: group)
    await writer.write(txn(True, A))
    await writer.write(txn(False, A, OFFSETS))
    assert group.calls == [(9, None, False)]
