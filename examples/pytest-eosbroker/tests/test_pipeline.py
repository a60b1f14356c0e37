"""The README's example: a transactional consume-transform-produce tested against a real broker."""

from confluent_kafka import Consumer, Producer


def uppercase(bootstrap, source, sink, count):
    """Read `count` records and write them upper-cased; output and offsets commit in one transaction."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "uppercase", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "uppercase-1"})
    producer.init_transactions()
    consumer.subscribe([source])
    batch = [consumer.poll(10) for _ in range(count)]
    producer.begin_transaction()
    for msg in batch:
        producer.produce(sink, key=msg.key(), value=msg.value().upper())
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                         consumer.consumer_group_metadata())
    producer.commit_transaction()
    consumer.close()


def test_uppercase_exactly_once(eosbroker):
    eosbroker.create_topic("words", partitions=2)
    eosbroker.create_topic("shouts")
    producer = Producer({"bootstrap.servers": eosbroker.bootstrap_servers})
    for word in ("kafka", "in", "python"):
        producer.produce("words", key=word, value=word)
    producer.flush()

    uppercase(eosbroker.bootstrap_servers, "words", "shouts", count=3)

    reader = Consumer({"bootstrap.servers": eosbroker.bootstrap_servers, "group.id": "check",
                       "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    reader.subscribe(["shouts"])
    assert sorted(reader.poll(10).value() for _ in range(3)) == [b"IN", b"KAFKA", b"PYTHON"]
    reader.close()
