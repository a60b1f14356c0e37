"""KIP-467 record errors with a real producer: a batch to a compacted topic holding some records
without a key is refused with INVALID_RECORD naming those records by index, so librdkafka fails
them with INVALID_RECORD and the keyed records of the same batch with _INVALID_DIFFERENT_RECORD
(the case librdkafka's own test 0011 checks), and a keyed batch that follows is written."""

from __future__ import annotations

from confluent_kafka import KafkaError, Producer

from broker.embedded import create_topic


def test_only_the_keyless_records_of_a_batch_fail_as_invalid_record(broker) -> None:  # type: ignore[no-untyped-def]
    create_topic(broker.bootstrap, "compacted", 1, {"cleanup.policy": "compact"})
    outcome: dict[int, int] = {}

    def report(i: int):  # type: ignore[no-untyped-def]
        return lambda err, _msg: outcome.__setitem__(i, err.code() if err else 0)

    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 500, "enable.idempotence": False,
                         "retries": 0})
    for i in range(20):
        producer.produce("compacted", value=b"v%d" % i, key=None if i % 10 == 0 else b"k%d" % i,
                         partition=0, on_delivery=report(i))
    assert producer.flush(60) == 0
    assert {i for i, code in outcome.items() if code == KafkaError.INVALID_RECORD} == {0, 10}
    assert {i for i, code in outcome.items() if code == KafkaError._INVALID_DIFFERENT_RECORD} == (
        set(range(20)) - {0, 10})
    producer.produce("compacted", key=b"k", value=b"v", partition=0, on_delivery=report(99))
    assert producer.flush(60) == 0 and outcome[99] == 0
