"""Transactions per second for one transactional producer (confluent-kafka): 1- and 100-record
transactions, each committed before the next begins. Usage: python bench/txn_throughput.py"""
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.broker_process import BrokerProcess  # noqa: E402

d = Path(tempfile.mkdtemp())
b = BrokerProcess(d / "data", {"transaction.state.log.num.partitions": "5"}).start()
try:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("bench", 1, 1)])["bench"].result(30)
    for size, seconds in ((1, 5.0), (100, 5.0)):
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": f"bench-{size}", "linger.ms": 0})
        p.init_transactions(30)
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            p.begin_transaction()
            for _ in range(size):
                p.produce("bench", value=b"x" * 100)
            p.commit_transaction(30)
            n += 1
        el = time.perf_counter() - start
        print(f"{size}-record transactions: {n / el:.1f} txn/s ({n * size / el:.0f} records/s) over {el:.1f}s")
finally:
    b.close()
