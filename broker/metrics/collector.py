"""The scrape: every series is computed here from the broker's state and the request counters,
so gauges cost nothing between scrapes. Names are those the Prometheus JMX exporter's common
Kafka rules (lowercaseOutputName, lowercaseOutputLabelNames) give Kafka's MBeans, so existing Kafka
dashboards work: kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=T becomes
kafka_server_brokertopicmetrics_bytesin_total{topic="T"}, and without the topic key (the
all-topics MBean) the same name without labels. eosbroker's own series start with eosbroker_.

Runs on the event loop (broker/metrics/http.py), so it reads coordinator and log state between
their awaits, consistently, without locks.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Final

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from coordinator.group.state import GroupState
from coordinator.transaction.outcomes import AbortCause
from coordinator.transaction.state import TxnState
from storage.api import PartitionLog, TopicPartition

from ..quotas.manager import now_ms
from .counters import REQUEST_TIME_BUCKETS_MS, BrokerMetrics

if TYPE_CHECKING:
    from storage.api import CleanerStats

    from ..state import BrokerState

__all__ = ("BrokerCollector", "OPEN_TXN_STATES")

# Transactions that hold back the LSO of their partitions: not yet complete.
OPEN_TXN_STATES: Final = frozenset({TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                                    TxnState.PREPARE_EPOCH_FENCE})
# BrokerTopicMetrics MBean name (minus PerSec) -> TopicStats field.
_TOPIC_METRICS: Final = (
    ("BytesIn", "bytes_in", "Bytes appended by clients"),
    ("BytesOut", "bytes_out", "Bytes sent in Fetch responses"),
    ("MessagesIn", "messages_in", "Records appended by clients"),
    ("TotalProduceRequests", "total_produce_requests", "Produce requests, per partition written"),
    ("FailedProduceRequests", "failed_produce_requests", "Produce requests that failed, per partition"),
    ("TotalFetchRequests", "total_fetch_requests", "Fetch requests, per partition read"),
    ("FailedFetchRequests", "failed_fetch_requests", "Fetch requests that failed, per partition"),
)
# GroupMetadataManager's gauges, as kafka.coordinator.group MBeans.
_GROUP_GAUGES: Final = {
    GroupState.PREPARING_REBALANCE: "NumGroupsPreparingRebalance",
    GroupState.COMPLETING_REBALANCE: "NumGroupsCompletingRebalance",
    GroupState.STABLE: "NumGroupsStable",
    GroupState.DEAD: "NumGroupsDead",
    GroupState.EMPTY: "NumGroupsEmpty",
}


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


class BrokerCollector(Collector):
    def __init__(self, state: BrokerState, metrics: BrokerMetrics,
                 connections: Callable[[], Mapping[tuple[str, str], int]],  # (listener, protocol) -> count
                 clock: Callable[[], int] = _wall_clock_ms) -> None:
        self._state = state
        self._metrics = metrics
        self._connections = connections
        self._now = clock

    def collect(self) -> Iterable[Metric]:
        self._metrics.forget_topics_except(self._state.logs.topics)
        yield from self._topic_metrics()
        yield self._request_count()
        yield self._request_time()
        yield from self._log_metrics()
        yield self._connection_count()
        yield from self._group_metrics()
        yield from self._share_group_metrics()
        yield from self._transaction_metrics()
        yield from _cleaner_metrics(self._state.cleaner_stats)
        yield from _quota_metrics(self._state)

    def _connection_count(self) -> Metric:
        # Kafka's socket-server-metrics connection-count, tagged with the listener's name (and here its
        # security protocol too); one network processor per listener in asyncio's terms.
        family = GaugeMetricFamily("kafka_server_socket_server_metrics_connection_count", "Open client connections",
                                   labels=["listener", "security_protocol", "networkprocessor"])
        for (listener, protocol), count in sorted(self._connections().items()):
            family.add_metric([listener, protocol, "0"], count)
        return family

    # -- BrokerTopicMetrics, RequestMetrics -----------------------------------------------------

    def _topic_metrics(self) -> Iterator[Metric]:
        total = self._metrics.all_topics()
        for mbean, attr, doc in _TOPIC_METRICS:
            family = CounterMetricFamily(f"kafka_server_brokertopicmetrics_{mbean.lower()}", doc, labels=["topic"])
            family.add_metric([], getattr(total, attr))  # the all-topics MBean carries no topic key
            for topic, stats in sorted(self._metrics.topics.items()):
                family.add_metric([topic], getattr(stats, attr))
            yield family

    def _request_count(self) -> Metric:
        family = CounterMetricFamily("kafka_network_requestmetrics_requests", "Requests handled",
                                     labels=["request", "version"])
        for stats in self._metrics.requests.values():
            for version, count in sorted(stats.versions.items()):
                family.add_metric([stats.name, str(version)], count)
        return family

    def _request_time(self) -> Metric:
        family = HistogramMetricFamily("kafka_network_requestmetrics_totaltimems",
                                       "Time from a request's arrival to its response, ms", labels=["request"])
        for stats in self._metrics.requests.values():
            cumulative, buckets = 0, []
            for bound, count in zip((*REQUEST_TIME_BUCKETS_MS, float("inf")), stats.buckets, strict=True):
                cumulative += count
                buckets.append((_le(bound), cumulative))
            family.add_metric([stats.name], buckets, stats.sum_ms)
        return family

    # -- logs ----------------------------------------------------------------------------------

    def _partitions(self) -> Iterator[tuple[TopicPartition, PartitionLog]]:
        logs = self._state.logs
        for name, meta in sorted(logs.topics.items()):
            for partition in range(meta.partitions):
                tp = TopicPartition(name, partition)
                if (plog := logs.find_log(tp)) is not None:
                    yield tp, plog

    def _log_metrics(self) -> Iterator[Metric]:
        labels = ["topic", "partition"]
        size = GaugeMetricFamily("kafka_log_log_size", "Bytes of the partition's log", labels=labels)
        end = GaugeMetricFamily("kafka_log_log_logendoffset", "Log end offset", labels=labels)
        start = GaugeMetricFamily("kafka_log_log_logstartoffset", "Log start offset", labels=labels)
        lag = GaugeMetricFamily("eosbroker_partition_last_stable_offset_lag",
                                "High watermark minus last stable offset: records held from read_committed "
                                "consumers by open transactions", labels=labels)
        count = 0
        for tp, plog in self._partitions():
            values = [tp.topic, str(tp.partition)]
            size.add_metric(values, plog.size_bytes)
            end.add_metric(values, plog.log_end_offset)
            start.add_metric(values, plog.log_start_offset)
            lag.add_metric(values, plog.high_watermark - plog.last_stable_offset)
            count += 1
        yield from (size, end, start, lag)
        # One node leads every partition it has.
        yield _gauge("kafka_server_replicamanager_partitioncount", "Partitions on this broker", {}, count)
        yield _gauge("kafka_server_replicamanager_leadercount", "Partitions this broker leads", {}, count)

    # -- coordinators --------------------------------------------------------------------------

    def _group_metrics(self) -> Iterator[Metric]:
        coordinator = self._state.group_coordinator
        groups = list(coordinator.groups.values()) if coordinator is not None else []
        # The classic states only: a consumer-protocol (KIP-848) group has its own (Empty, Assigning, ...).
        by_state = Counter(group.state for group in groups if group.consumer is None)
        prefix = "kafka_coordinator_group_groupmetadatamanager_"
        yield _gauge(prefix + "numgroups", "Consumer groups", {}, len(groups))
        for state, mbean in _GROUP_GAUGES.items():
            yield _gauge(prefix + mbean.lower(), f"Consumer groups in state {state.value}", {}, by_state[state])

    def _share_group_metrics(self) -> Iterator[Metric]:
        coordinator = self._state.share_coordinator
        by_group = coordinator.manager.group_metrics() if coordinator is not None else {}
        records = CounterMetricFamily("eosbroker_share_group_records", "Share group records by outcome: "
                                      "acquired, acknowledged, released (available again) and archived",
                                      labels=["group", "outcome"])
        lag = GaugeMetricFamily("eosbroker_share_group_lag", "Records up to the high watermark that a share group has "
                                "not acknowledged or archived", labels=["group"])
        for group_id, (outcomes, group_lag) in sorted(by_group.items()):
            for outcome in ("acquired", "acknowledged", "released", "archived"):
                records.add_metric([group_id, outcome], outcomes[outcome])
            lag.add_metric([group_id], group_lag)
        yield records
        yield lag

    def _transaction_metrics(self) -> Iterator[Metric]:
        coordinator = self._state.txn_coordinator
        transactions = list(coordinator.transactions.values()) if coordinator is not None else []
        open_txns = [md for md in transactions if md.state in OPEN_TXN_STATES]
        yield _gauge("eosbroker_transactions_ongoing", "Transactions begun and not yet complete "
                     "(Ongoing, PrepareCommit, PrepareAbort)", {}, len(open_txns))
        committed = CounterMetricFamily("eosbroker_transactions_committed", "Transactions committed")
        aborted = CounterMetricFamily("eosbroker_transactions_aborted", "Transactions aborted, by cause",
                                      labels=["cause"])
        if coordinator is not None:
            committed.add_metric([], coordinator.outcomes.committed)
            for cause in AbortCause:
                aborted.add_metric([cause.value], coordinator.outcomes.aborted[cause])
        yield committed
        yield aborted
        yield self._oldest_open()

    def _oldest_open(self) -> Metric:
        # From the partition logs, not the coordinator: a hanging transaction (a producer the
        # coordinator does not know) holds the LSO back too, and is the one an operator must see.
        now = self._now()
        family = GaugeMetricFamily("eosbroker_partition_oldest_open_transaction_age_seconds",
                                   "Age of the oldest open transaction writing to the partition",
                                   labels=["topic", "partition"])
        for tp, txns in sorted(self._state.logs.open_transactions().items()):
            family.add_metric([tp.topic, str(tp.partition)], max(now - txns[0].start_timestamp, 0) / 1000)
        return family


def _quota_metrics(state: BrokerState) -> Iterator[Metric]:
    """Kafka's kafka.server:type=Produce|Fetch,user=U,client-id=C byte-rate and throttle-time, for
    the clients measured against a quota (broker/quotas)."""
    quotas = state.quotas
    if quotas is None:
        return
    now = now_ms()
    for mbean, kind in (("produce", quotas.produce), ("fetch", quotas.fetch)):
        rate = GaugeMetricFamily(f"kafka_server_{mbean}_byte_rate", "Bytes per second, as the quota measures them",
                                 labels=["user", "client_id"])
        throttle = GaugeMetricFamily(f"kafka_server_{mbean}_throttle_time",
                                     "Average throttle time given over the quota windows, ms",
                                     labels=["user", "client_id"])
        for (user, client_id), byte_rate, throttle_ms in sorted(kind.measured(now)):
            rate.add_metric([user, client_id], byte_rate)
            throttle.add_metric([user, client_id], throttle_ms)
        yield rate
        yield throttle


def _gauge(name: str, doc: str, labels: dict[str, str], value: float) -> Metric:
    family = GaugeMetricFamily(name, doc, labels=list(labels))
    family.add_metric(list(labels.values()), value)
    return family


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)



def _cleaner_metrics(stats: CleanerStats | None) -> Iterator[Metric]:
    """The log cleaner's passes (storage/cleaner/log_cleaner.py CleanerStats), when it runs."""
    if stats is None:
        return
    for name, doc, value in (
        ("eosbroker_log_cleaner_passes", "Cleaning passes completed", stats.passes),
        ("eosbroker_log_cleaner_bytes_read", "Bytes of closed segments read by cleaning passes", stats.bytes_read),
        ("eosbroker_log_cleaner_bytes_written", "Bytes of cleaned segments written", stats.bytes_written),
        ("eosbroker_log_cleaner_failures", "Cleaning passes that failed", stats.failures),
    ):
        family = CounterMetricFamily(name, doc)
        family.add_metric([], value)
        yield family
    last = stats.last
    if last is not None:  # Kafka's LogCleaner MBean values, of the latest pass
        yield _gauge("kafka_log_logcleaner_cleaner_recopy_percent", "Bytes written as a share of bytes read, "
                     "latest pass", {}, 100 * last.bytes_written / max(last.bytes_read, 1))
        yield _gauge("kafka_log_logcleaner_max_clean_time_secs", "Duration of the latest pass", {}, last.seconds)
    ratio = GaugeMetricFamily("eosbroker_log_cleaner_dirty_ratio", "Dirty share of the cleanable log before and "
                              "after the partition's latest pass", labels=["partition", "when"])
    for partition, s in sorted(stats.by_partition.items()):
        ratio.add_metric([partition, "before"], s.dirty_ratio_before)
        ratio.add_metric([partition, "after"], s.dirty_ratio_after)
    yield ratio
