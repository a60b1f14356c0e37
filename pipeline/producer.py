"""The demo's writers: topic creation and a confluent-kafka transactional producer that commits or
aborts each planned transaction."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from .transfers import PlannedTxn


@dataclass(slots=True)
class ProduceStats:
    committed: int = 0
    aborted: int = 0
    events_committed: int = 0
    events_aborted: int = 0


def create_topics(bootstrap: str, partitions: dict[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, n, 1) for name, n in partitions.items()])
    for name, future in futures.items():
        try:
            future.result(30)
        except KafkaException as exc:
            if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
                raise RuntimeError(f"cannot create topic {name}: {exc}") from exc


def produce_plan(
    bootstrap: str,
    topic: str,
    plan: Iterable[PlannedTxn],
    *,
    transactional_id: str,
    on_progress: Callable[[ProduceStats], None] | None = None,
) -> ProduceStats:
    """Run each planned transaction: produce its events keyed by the paying account, then commit
    or abort. Returns what was committed and aborted."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "linger.ms": 5,
        }
    )
    producer.init_transactions(60)
    stats = ProduceStats()
    for txn in plan:
        producer.begin_transaction()
        for t in txn.transfers:
            producer.produce(topic, key=t.from_account.encode(), value=t.to_json())
        if txn.commit:
            producer.commit_transaction(60)
            stats.committed += 1
            stats.events_committed += len(txn.transfers)
        else:
            producer.flush(60)  # the records reach the log, so the abort has something to hide
            producer.abort_transaction(60)
            stats.aborted += 1
            stats.events_aborted += len(txn.transfers)
        if on_progress:
            on_progress(stats)
    producer.flush(60)
    return stats
