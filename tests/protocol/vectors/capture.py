"""Regenerate the record-batch test vectors: produce a few records with each real client in each
codec to a fresh broker, then copy each partition's segment file (the batches as stored, which are
the client's bytes with base_offset and partition_leader_epoch patched; both lie outside the CRC).

librdkafka compresses with lz4 only when the broker advertises FindCoordinator (its LZ4 feature
depends on it); confluent-lz4.bin was captured from a broker that does.

Run from the repository root: python -m tests.protocol.vectors.capture
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker_process import BrokerProcess

HERE = Path(__file__).resolve().parent
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
RECORDS = [(b"k%d" % i, b"value-%d " % i * 12, [("h", b"x%d" % i)]) for i in range(5)]


def _confluent(bootstrap: str, topic: str, codec: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 100,
                  "enable.idempotence": False})
    for key, value, headers in RECORDS:
        p.produce(topic, value, key, partition=0, headers=headers, timestamp=1_700_000_000_000)
    assert p.flush(30) == 0


def _kafka_python(bootstrap: str, topic: str, codec: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import kafka
    p = kafka.KafkaProducer(bootstrap_servers=bootstrap, linger_ms=100,
                            compression_type=None if codec == "none" else codec)
    for key, value, headers in RECORDS:
        p.send(topic, value, key, headers=headers, partition=0, timestamp_ms=1_700_000_000_000)
    p.flush(30)
    p.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data").start()
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            names = [f"{client}-{codec}" for client in ("confluent", "kafka-python") for codec in CODECS]
            for f in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
                f.result(30)
            for codec in CODECS:
                _confluent(broker.bootstrap, f"confluent-{codec}", codec)
                _kafka_python(broker.bootstrap, f"kafka-python-{codec}", codec)
        finally:
            broker.close()
        for name in names:
            src = Path(tmp) / "data" / f"{name}-0" / f"{0:020d}.log"
            shutil.copyfile(src, HERE / f"{name}.bin")
            print(name, src.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
