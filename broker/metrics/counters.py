"""The counters the request path keeps: plain ints on slotted objects, one per topic and one per
API, found with one dict lookup. Nothing here knows Prometheus; the collector (collector.py)
reads these at scrape time, adds the all-topics totals and names everything as Kafka's JMX
exporter rules would.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from typing import Final

from protocol.api_keys import ApiKey

__all__ = ("BrokerMetrics", "REQUEST_TIME_BUCKETS_MS", "RequestStats", "TopicStats", "request_name")

# Upper bounds (ms) of the request time histogram; the last bucket is +Inf. Fetch long polls sit
# near fetch.max.wait.ms (500 by default), transactions' EndTxn at a few ms.
REQUEST_TIME_BUCKETS_MS: Final = (0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0,
                                  2500.0, 5000.0, 10000.0, 30000.0)


class TopicStats:
    """Kafka's BrokerTopicMetrics for one topic."""

    __slots__ = ("bytes_in", "bytes_out", "messages_in", "total_produce_requests", "failed_produce_requests",
                 "total_fetch_requests", "failed_fetch_requests")

    FIELDS: Final = __slots__
    bytes_in: int
    bytes_out: int
    messages_in: int
    total_produce_requests: int
    failed_produce_requests: int
    total_fetch_requests: int
    failed_fetch_requests: int

    def __init__(self) -> None:
        for name in self.FIELDS:
            setattr(self, name, 0)

    def add(self, other: TopicStats) -> None:
        for name in self.FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class RequestStats:
    """Kafka's RequestMetrics for one API: requests by version, and total time in ms."""

    __slots__ = ("name", "versions", "buckets", "sum_ms")

    def __init__(self, name: str) -> None:
        self.name = name
        self.versions: dict[int, int] = {}
        self.buckets = [0] * (len(REQUEST_TIME_BUCKETS_MS) + 1)
        self.sum_ms = 0.0

    def observe(self, version: int, seconds: float) -> None:
        ms = seconds * 1000
        self.versions[version] = self.versions.get(version, 0) + 1
        self.buckets[bisect_left(REQUEST_TIME_BUCKETS_MS, ms)] += 1
        self.sum_ms += ms


def request_name(api_key: int) -> str:
    """Kafka's name of the API (ApiKeys.name), as its RequestMetrics label it: END_TXN -> EndTxn."""
    try:
        return "".join(part.capitalize() for part in ApiKey(api_key).name.split("_"))
    except ValueError:
        return f"ApiKey{api_key}"


class BrokerMetrics:
    """Counters updated on the request path. Topics that are deleted fold into `removed`, so the
    all-topics totals never go down (Prometheus counters must not)."""

    __slots__ = ("topics", "requests", "removed")

    def __init__(self) -> None:
        self.topics: dict[str, TopicStats] = {}
        self.requests: dict[int, RequestStats] = {}
        self.removed = TopicStats()

    def topic(self, name: str) -> TopicStats:
        stats = self.topics.get(name)
        if stats is None:
            stats = self.topics[name] = TopicStats()
        return stats

    def request(self, api_key: int) -> RequestStats:
        stats = self.requests.get(api_key)
        if stats is None:
            stats = self.requests[api_key] = RequestStats(request_name(api_key))
        return stats

    def forget_topics_except(self, existing: Iterable[str]) -> None:
        """Drop the per-topic counters of deleted topics, keeping their counts in the totals
        (Kafka removes a deleted topic's BrokerTopicMetrics too)."""
        keep = set(existing)
        for name in [n for n in self.topics if n not in keep]:
            self.removed.add(self.topics.pop(name))

    def all_topics(self) -> TopicStats:
        total = TopicStats()
        total.add(self.removed)
        for stats in self.topics.values():
            total.add(stats)
        return total
