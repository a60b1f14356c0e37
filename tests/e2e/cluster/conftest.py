"""A cluster for end-to-end tests: broker processes (tests/broker_process.py) with node ids 1..N
over one fresh database of the session's real PostgreSQL server (pg_url), as `python -m broker
--set cluster.url=...` runs them. At teardown every broker still running is stopped with SIGTERM
and checked as broker_factory checks one (an ERROR line or traceback not declared fails the test)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from tests.broker_process import BrokerProcess
from tests.kafka_wire import RawClient

# Short leases keep failover tests quick; small internal topics keep start-up quick.
LEASE_MS = 3000
CLUSTER_SETTINGS = {"cluster.lease.ms": str(LEASE_MS), "transaction.state.log.num.partitions": "4",
                    "offsets.topic.num.partitions": "4"}
WAIT_S = 60.0


class Cluster:
    def __init__(self, url: str, root: Path) -> None:
        self.url = url
        self.root = root
        self.brokers: dict[int, BrokerProcess] = {}
        self.ended: set[int] = set()  # killed or stopped by the test

    def start(self, *node_ids: int, settings: dict[str, str] | None = None) -> Cluster:
        for node_id in node_ids:
            proc = self.brokers.get(node_id)
            if proc is None:
                proc = BrokerProcess(self.root / f"node{node_id}", {
                    **CLUSTER_SETTINGS, **(settings or {}), "cluster.url": self.url, "node.id": str(node_id)})
                self.brokers[node_id] = proc
            proc.start(timeout=WAIT_S)
            self.ended.discard(node_id)
        # Each broker sees the others within a balancing round (lease / 4): wait for that, so a
        # test starts from one agreed membership.
        for node_id in self.live():
            wait_until(lambda n=node_id: self.brokers_seen(n) == self.live(),  # type: ignore[misc]
                       f"broker {node_id} seeing brokers {self.live()}")
        return self

    def kill(self, node_id: int, empty_data_dir: bool = False) -> None:
        self.brokers[node_id].kill()
        self.ended.add(node_id)
        if empty_data_dir:
            shutil.rmtree(self.brokers[node_id].data_dir)

    def live(self) -> list[int]:
        return sorted(n for n in self.brokers if n not in self.ended)

    def bootstrap(self, *node_ids: int) -> str:
        return ",".join(self.brokers[n].bootstrap for n in (node_ids or self.live()))

    def metadata(self, via: int, topic: str) -> Any:
        with RawClient(self.brokers[via].bootstrap) as client:
            return client.request(MetadataRequest(
                topics=(MetadataRequestTopic(name=topic, topic_id=None),), allow_auto_topic_creation=False,
                include_topic_authorized_operations=False))

    def leaders(self, topic: str, via: int) -> dict[int, tuple[int, int]]:
        """partition -> (leader, leader epoch) as broker `via` answers Metadata."""
        [entry] = self.metadata(via, topic).topics
        return {p.partition_index: (p.leader_id, p.leader_epoch) for p in entry.partitions}

    def brokers_seen(self, via: int) -> list[int]:
        return sorted(b.node_id for b in self.metadata(via, "__none__").brokers)

    def settled(self, topic: str, leaders: set[int] | None = None) -> dict[int, tuple[int, int]]:
        """Wait until every live broker answers Metadata alike: every partition of topic led by a
        live broker (one of `leaders` if given), and the live brokers listed; returns the leaders."""
        want = leaders or set(self.live())
        found: dict[int, tuple[int, int]] = {}

        def done() -> bool:
            nonlocal found
            views = [self.leaders(topic, n) for n in self.live()]
            found = views[0]
            return bool(found) and all(v == found for v in views) and \
                {leader for leader, _ in found.values()} <= want and \
                all(self.brokers_seen(n) == self.live() for n in self.live())

        wait_until(done, f"{topic}'s partitions led by {sorted(want)} as every broker sees it")
        return found

    def stop_all(self) -> list[str]:
        for node_id, proc in self.brokers.items():
            if node_id not in self.ended:
                proc.stop()
        return [p for proc in self.brokers.values() for p in proc.problems()]


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def cluster(pg_url: str, tmp_path: Path) -> Iterator[Cluster]:
    """Brokers of one cluster, none started yet: cluster.start(1, 2, 3)."""
    c = Cluster(pg_url, tmp_path)
    yield c
    problems = c.stop_all()
    assert not problems, "a broker misbehaved; declare what the test provokes with expect_log(regex):\n" \
        + "\n".join(problems)
