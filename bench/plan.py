"""What a run does: the sizes, and the cases of each workload with their parameters.

A case is one load-generator invocation; a metric says which way is better so
the report can tell whether a ratio ours/Kafka favours us.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

HIGHER, LOWER = "higher", "lower"
# The broker's CPU seconds per GB moved, from the load's byte count (its own cost, beside MB/s).
CPU_PER_GB = "broker CPU s/GB"
# Per record delivered, for loads that count records rather than bytes (the share cases).
CPU_PER_RECORD = "broker CPU us/record"
PEAK_RSS = "broker peak RSS MB"
CLEAN_START, UNCLEAN_START = "start after clean stop s", "start after kill -9 s"


@dataclass(frozen=True, slots=True, kw_only=True)
class Size:
    rounds: int
    warmup_records: int
    produce_records: int
    txn_records: int
    read_committed_mb: int
    ctp_records: int
    txns_one: int
    txns_each_of_8: int
    e2e_rate: int
    e2e_seconds: float
    tool_records: int  # records of 1 KiB per run of Kafka's load tools (k cases)
    redeliveries: int  # lock expiries timed by q2-redelivery (each takes SHARE_LOCK_MS and two JVM starts)


SIZES = {
    "tiny": Size(rounds=1, warmup_records=500, produce_records=2_000, txn_records=2_000,
                 read_committed_mb=2, ctp_records=2_000, txns_one=20, txns_each_of_8=5,
                 e2e_rate=50, e2e_seconds=2, tool_records=2_000, redeliveries=1),
    "small": Size(rounds=3, warmup_records=20_000, produce_records=200_000, txn_records=60_000,
                  read_committed_mb=128, ctp_records=20_000, txns_one=300, txns_each_of_8=60,
                  e2e_rate=200, e2e_seconds=10, tool_records=500_000, redeliveries=5),
    "full": Size(rounds=5, warmup_records=50_000, produce_records=300_000, txn_records=200_000,
                 read_committed_mb=1024, ctp_records=100_000, txns_one=1_000, txns_each_of_8=200,
                 e2e_rate=500, e2e_seconds=30, tool_records=2_000_000, redeliveries=10),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    key: str            # short id used in the JSON and the table
    title: str
    load: str           # bench.load module name
    params: Callable[[Size, str], dict]  # (size, topic prefix) -> load parameters
    metrics: dict[str, str]  # metric name -> HIGHER or LOWER


CASES = (
    Case(key="w1-p1", title="1 produce idempotent acks=all, 1 partition", load="produce",
         params=lambda s, t: {"topic": t, "partitions": 1, "records": s.produce_records},
         metrics={"MB/s": HIGHER, "records/s": HIGHER}),
    Case(key="w1-p6", title="1 produce idempotent acks=all, 6 partitions", load="produce",
         params=lambda s, t: {"topic": t, "partitions": 6, "records": s.produce_records},
         metrics={"MB/s": HIGHER, "records/s": HIGHER}),
    Case(key="w2-100ms", title="2 txn produce, commit every 100 ms", load="txn_produce",
         params=lambda s, t: {"topic": t, "partitions": 1, "records": s.txn_records,
                              "commit_ms": 100},
         metrics={"MB/s": HIGHER, "txns/s": HIGHER}),
    Case(key="w2-1000rec", title="2 txn produce, commit every 1000 records", load="txn_produce",
         params=lambda s, t: {"topic": t, "partitions": 1, "records": s.txn_records,
                              "commit_records": 1000},
         metrics={"MB/s": HIGHER, "txns/s": HIGHER}),
    Case(key="w3", title="3 read_committed consume (20% aborted)", load="read_committed",
         params=lambda s, t: {"topic": t, "partitions": 1, "total_mb": s.read_committed_mb,
                              "txn_records": 500, "abort_every": 5},
         metrics={"MB/s": HIGHER, "records/s": HIGHER}),
    Case(key="w4", title="4 consume-transform-produce", load="ctp",
         params=lambda s, t: {"input": t + "-in", "output": t + "-out", "partitions": 1,
                              "records": s.ctp_records, "batch_records": 500},
         metrics={"txns/s": HIGHER, "records/s": HIGHER}),
    Case(key="w5-1", title="5 one-record txns, 1 producer", load="txn_latency",
         params=lambda s, t: {"topic": t, "partitions": 1, "producers": 1,
                              "txns_each": s.txns_one},
         metrics={"p50 ms": LOWER, "p99 ms": LOWER, "txns/s": HIGHER}),
    Case(key="w5-8", title="5 one-record txns, 8 producers", load="txn_latency",
         params=lambda s, t: {"topic": t, "partitions": 1, "producers": 8,
                              "txns_each": s.txns_each_of_8},
         metrics={"p50 ms": LOWER, "p99 ms": LOWER, "txns/s": HIGHER}),
    # Issue 14: the same one-record transactions from Kafka's Java producer (kafka-clients 4.x),
    # under Transactions V1 and V2 (the case sets transaction.version with UpdateFeatures first).
    *(Case(key=f"w5-java-tv{tv}", title=f"5 one-record txns, Java 4.x producer, transaction.version={tv}",
           load="java_txn_latency",
           params=lambda s, t, tv=tv: {"topic": t, "partitions": 1, "txns": s.txns_one, "transaction_version": tv},
           metrics={"p50 ms": LOWER, "p99 ms": LOWER, "txns/s": HIGHER}) for tv in (1, 2)),
    Case(key="w6", title="6 end-to-end latency, read_committed", load="e2e_latency",
         params=lambda s, t: {"topic": t, "rate": s.e2e_rate, "seconds": s.e2e_seconds},
         metrics={"p50 ms": LOWER, "p99 ms": LOWER}),
    # Issue 14: a 3-member group's rebalance under each group protocol (no size dependence).
    Case(key="w8-classic", title="8 rebalance of 3 members, classic protocol", load="rebalance",
         params=lambda s, t: {"topic": t, "protocol": "classic"},
         metrics={"join s": LOWER, "leave s": LOWER}),
    Case(key="w8-consumer", title="8 rebalance of 3 members, consumer protocol (KIP-848)", load="rebalance",
         params=lambda s, t: {"topic": t, "protocol": "consumer"},
         metrics={"join s": LOWER, "leave s": LOWER}),
)

def _producer_perf(batch_size: int, linger_ms: int, transaction_ms: int = 0) -> Callable[[Size, str], dict]:
    return lambda s, t: {"topic": t, "partitions": 1, "records": s.tool_records, "batch_size": batch_size,
                         "linger_ms": linger_ms, "transaction_ms": transaction_ms}


# steady p99 ms: after ProducerPerformance's --warmup-records (bench/load/kafka_perf.py).
_PERF_PRODUCE = {"MB/s": HIGHER, "records/s": HIGHER, "p99 ms": LOWER, "steady p99 ms": LOWER, CPU_PER_GB: LOWER}
_PERF_CONSUME = {"MB/s": HIGHER, "records/s": HIGHER, CPU_PER_GB: LOWER}
# Kafka's own load tools (issue 15): a JVM drives the load, so no figure is set by a Python loop.
KAFKA_TOOL_CASES = (
    Case(key="k1-16k", title="k1 ProducerPerformance, idempotent acks=all, batch 16 KiB linger 5 ms",
         load="producer_perf", params=_producer_perf(16384, 5), metrics=_PERF_PRODUCE),
    Case(key="k1-64k", title="k1 ProducerPerformance, idempotent acks=all, batch 64 KiB linger 10 ms",
         load="producer_perf", params=_producer_perf(65536, 10), metrics=_PERF_PRODUCE),
    Case(key="k1-256k", title="k1 ProducerPerformance, idempotent acks=all, batch 256 KiB linger 10 ms",
         load="producer_perf", params=_producer_perf(262144, 10), metrics=_PERF_PRODUCE),
    Case(key="k2-txn", title="k2 ProducerPerformance, transactional, 100 ms transactions, batch 64 KiB",
         load="producer_perf", params=_producer_perf(65536, 10, 100), metrics=_PERF_PRODUCE),
    Case(key="k3-ru", title="k3 ConsumerPerformance, read_uncommitted", load="consumer_perf",
         params=lambda s, t: {"topic": t, "partitions": 1, "records": s.tool_records,
                              "isolation": "read_uncommitted"}, metrics=_PERF_CONSUME),
    Case(key="k3-rc", title="k3 ConsumerPerformance, read_committed (transactional data)", load="consumer_perf",
         params=lambda s, t: {"topic": t, "partitions": 1, "records": s.tool_records,
                              "isolation": "read_committed"}, metrics=_PERF_CONSUME),
    Case(key="k4-e2e", title="k4 EndToEndLatency, acks=all, one record at a time", load="java_e2e_latency",
         params=lambda s, t: {"topic": t, "records": max(200, s.tool_records // 500)},
         metrics={"p50 ms": LOWER, "p99 ms": LOWER}),
)
CASES = CASES + KAFKA_TOOL_CASES

# Security (issue 12): w1-p1 over TLS and over SASL_SSL (PLAIN), beside w1-p1 on PLAINTEXT, and
# the connection handshake on each listener. The brokers get SSL and SASL_SSL listeners only in
# runs that include one of these (bench/security.py).
SECURITY_CASES = (
    Case(key="t1-ssl", title="t1 as w1-p1 (idempotent acks=all, 1 partition) over SSL", load="produce",
         params=lambda s, t: {"topic": t, "partitions": 1, "records": s.produce_records, "listener": "SSL"},
         metrics={"MB/s": HIGHER, "records/s": HIGHER}),
    Case(key="t1-sasl-ssl", title="t1 as w1-p1 over SASL_SSL (PLAIN)", load="produce",
         params=lambda s, t: {"topic": t, "partitions": 1, "records": s.produce_records, "listener": "SASL_SSL"},
         metrics={"MB/s": HIGHER, "records/s": HIGHER}),
    Case(key="t2-handshake", title="t2 connect to the first ApiVersions answer: plaintext, TLS 1.3, SASL_SSL "
         "PLAIN, SCRAM-SHA-512 and OAUTHBEARER (an OIDC provider's JWT)", load="handshake",
         params=lambda s, t: {"connections": max(20, s.txns_one // 5)},
         metrics={f"{kind} {q} ms": LOWER for kind in ("plaintext", "tls", "sasl_ssl-plain",
                                                       "sasl_ssl-scram-sha-512", "sasl_ssl-oauthbearer")
                  for q in ("p50", "p99")}),
)
CASES = CASES + SECURITY_CASES

# Share groups (issue 35): Kafka's ShareConsumerPerformance with 1 and 4 share consumers
# (implicit acknowledgement) over a topic filled beforehand, and the time from a record lock's
# expiry to the record's delivery to the group's other member (bench/load/java/ShareRedelivery.java).
# share.record.lock.duration.ms of q2's groups: Kafka's lowest by default, long enough for the second
# member's JVM to start and join while the first holds the record.
SHARE_LOCK_MS = 15_000
_SHARE_CONSUME = {"records/s": HIGHER, CPU_PER_RECORD: LOWER}
SHARE_CASES = (
    *(Case(key=f"q1-share-c{n}", title=f"q1 ShareConsumerPerformance, {n} share consumer{'s' * (n > 1)}, "
           "implicit acknowledgement, 4 partitions", load="share_perf",
           params=lambda s, t, n=n: {"topic": t, "partitions": 4, "records": s.tool_records, "consumers": n},
           metrics=_SHARE_CONSUME) for n in (1, 4)),
    Case(key="q2-redelivery", title=f"q2 share lock expiry ({SHARE_LOCK_MS:,} ms) to redelivery to another member",
         load="share_redelivery",
         params=lambda s, t: {"topic": t, "samples": s.redeliveries, "lock_ms": SHARE_LOCK_MS},
         metrics={"redelivery p50 ms": LOWER, "redelivery max ms": LOWER}),
)
CASES = CASES + SHARE_CASES

# Scale (issue 15; --scale, not in the default set: each takes minutes at full size).
SCALE_CASES = (
    Case(key="s1-1000p", title="s1 20 producers (4 processes) over 1,000 partitions, idempotent acks=all",
         load="many_producers", params=lambda s, t: {"topic": t, "partitions": 1000, "producers": 20,
                                                     "processes": 4, "records": s.tool_records},
         metrics={"MB/s": HIGHER, "p99 ms": LOWER, CPU_PER_GB: LOWER}),
    Case(key="s2-group50", title="s2 a group of 50 members over 1,000 partitions, to a stable assignment",
         load="big_group", params=lambda s, t: {"topic": t, "partitions": 1000, "members": 50},
         metrics={"settle s": LOWER}),
    # Kafka 4.x refuses segment.bytes below 1 MiB, so the partition count follows the size
    # (tiny 20, small 200, full 1,000: 10 GiB written) to keep the fill within reach.
    Case(key="s4-startup", title="s4 start-up with many partitions of 10 segments of 1 MiB, after a clean stop "
         "and after kill -9", load="fill_segments",
         params=lambda s, t: {"topic": t, "partitions": min(1000, max(20, s.tool_records // 2500)), "segments": 10,
                              "segment_bytes": 1 << 20},
         metrics={CLEAN_START: LOWER, UNCLEAN_START: LOWER}),
    Case(key="s3-conn2000", title="s3 2,000 connections, ApiVersions from each every 2 s", load="connections",
         params=lambda s, t: {"connections": 2000, "interval_s": 2.0, "seconds": max(10.0, s.e2e_seconds * 2)},
         metrics={"p99 ms": LOWER, "requests/s": HIGHER, PEAK_RSS: LOWER}),
)

# Several processes (issue 34; --processes, or --cases): m1-produce's client costs next to nothing
# (bench.micro's pre-built Produce requests, one connection per partition, each to its leader), so
# the broker is the limit; k1-64k-x4 is Kafka's ProducerPerformance from four JVMs at once.
PROCESS_CASES = (
    Case(key="m1-produce", title="m1 pre-built idempotent Produce v9 requests of 64 KiB, 16 connections each "
         "to its partition's leader, 5 in flight each", load="micro_produce",
         params=lambda s, t: {"topic": t, "partitions": 16, "batch_kb": 64, "mb": max(16, s.tool_records // 1024)},
         metrics={"MB/s": HIGHER, "records/s": HIGHER, CPU_PER_GB: LOWER}),
    Case(key="k1-64k-x4", title="k1-64k from 4 ProducerPerformance processes at once, 16 partitions",
         load="producer_perf_many",
         params=lambda s, t: {**_producer_perf(65536, 10)(s, t), "partitions": 16, "producers": 4},
         metrics={"MB/s": HIGHER, "records/s": HIGHER, "p99 ms": LOWER, CPU_PER_GB: LOWER}),
)
PROCESS_CASE_KEYS = ("m1-produce", "k1-64k-x4", "w1-p6")

# Cluster mode (--cluster): these cases against the local-disk broker, one broker over PostgreSQL
# and three brokers over the same PostgreSQL; failover only where there is a successor.
CLUSTER_CASE_KEYS = ("w1-p6", "w2-100ms", "w5-8")
FAILOVER = Case(key="c1-failover", title="c1 failover: kill -9 of a leader to the first ack (3 brokers)",
                load="failover", params=lambda s, t: {"topic": t, "partitions": 3, "rate": 100},
                metrics={"failover s": LOWER})

# Workload 7 is measured by the harness around the others, not by a load process.
W7_KEY = "w7"
W7_TITLE = "7 start-up and resident memory"
# RSS sums every process's resident pages, so a cluster's counts PostgreSQL's shared_buffers once per
# backend; PSS splits each shared page among the processes mapping it, so its sum counts them once.
# Per broker: the brokers' own PSS (a --processes set's supervisor included, PostgreSQL's not) over
# their number, what issue 33's idle memory goal is about.
IDLE_PSS = "idle PSS MB"
IDLE_PSS_PER_BROKER = "idle PSS MB per broker (no PG)"
PSS_UNDER_W1 = "PSS under w1 MB"  # sampled every second, RSS every 0.1 s (bench/loadrun.py)
W7_METRICS = {"start-up s": LOWER, "idle RSS MB": LOWER, IDLE_PSS: LOWER, IDLE_PSS_PER_BROKER: LOWER,
              "RSS under w1 MB": LOWER, PSS_UNDER_W1: LOWER,
              # --cleaner-on-off: the passes the cleaner made through the round (bench/cleaner_load.py)
              "cleaner MB/s": HIGHER, "cleaner MB/CPU s": HIGHER}
WARMUP = Case(key="warmup", title="warm-up (not reported)", load="produce",
              params=lambda s, t: {"topic": t, "partitions": 1, "records": s.warmup_records},
              metrics={})


def metric_directions() -> dict[tuple[str, str], str]:
    table = {(case.key, name): way for case in CASES for name, way in case.metrics.items()}
    table.update({(W7_KEY, name): way for name, way in W7_METRICS.items()})
    table.update({(FAILOVER.key, name): way for name, way in FAILOVER.metrics.items()})
    table.update({(c.key, name): way for c in SCALE_CASES + PROCESS_CASES for name, way in c.metrics.items()})
    return table
