"""The history workload, in the manner of Jepsen's Kafka test: writers run while faults come and go,
reads are taken between faults and at the end, and the checker judges the whole history.

It needs only a `Cluster` (something with a bootstrap address) and a sequence of `Fault`s (a
nemesis: inject, then heal). One broker process with `KillRestart` is the single-node case; the
cluster issue brings its own cluster object and faults (kill a leader, pause a process, restart the
database) and reuses everything else."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from tests.e2e.txn_clients import create_topics
from tests.history.checker import History, Isolation, TopicPartition
from tests.history.clients import IdempotentWriter, TransactionalWriter, read_all, wait_stable

WAIT_S = 60.0


class Cluster(Protocol):
    @property
    def bootstrap(self) -> str: ...


class Fault(Protocol):
    name: str

    def inject(self, cluster: Cluster) -> None: ...

    def heal(self, cluster: Cluster) -> None: ...


class Killable(Cluster, Protocol):
    def kill(self) -> None: ...

    def start(self) -> object: ...


@dataclass
class KillRestart:
    """SIGKILL the broker, then start it again on the same data (tests.broker_process.BrokerProcess,
    or any cluster that kills and starts one process)."""

    target: Killable
    name: str = "kill -9 and restart"

    def inject(self, cluster: Cluster) -> None:
        self.target.kill()

    def heal(self, cluster: Cluster) -> None:
        self.target.start()


class Pausable(Cluster, Protocol):
    def pause(self) -> None: ...

    def resume(self) -> None: ...


@dataclass
class PauseResume:
    """SIGSTOP the broker, then SIGCONT: clients time out and retry on new connections while the
    old requests wait in the paused process, which then handles them late."""

    target: Pausable
    name: str = "SIGSTOP and SIGCONT"

    def inject(self, cluster: Cluster) -> None:
        self.target.pause()

    def heal(self, cluster: Cluster) -> None:
        self.target.resume()


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadConfig:
    topics: tuple[str, ...] = ("history-a", "history-b")
    partitions: int = 3
    transactional_writers: int = 2
    idempotent_writers: int = 2
    cycles: int = 3
    # progress between faults: every transactional writer commits this many transactions and
    # every idempotent writer gets this many sends acknowledged (so each cycle proves recovery)
    progress: int = 5
    commit_ratio: float = 0.7
    # how long a fault lasts, drawn for each cycle from [0, hold_s]: the writers run against it
    # (a pause, not synchronisation)
    hold_s: float = 1.0
    seed: int = 0

    @property
    def tps(self) -> list[TopicPartition]:
        return [(t, p) for t in self.topics for p in range(self.partitions)]


def run(cluster: Cluster, faults: Sequence[Fault], config: WorkloadConfig) -> History:
    history = History()
    rng = random.Random(config.seed)
    create_topics(cluster.bootstrap, config.topics, config.partitions)
    tps = config.tps
    txn = [TransactionalWriter(f"txn-{i}", cluster.bootstrap, tps, history, random.Random(rng.random()),
                               config.commit_ratio) for i in range(config.transactional_writers)]
    idem = [IdempotentWriter(f"idem-{i}", cluster.bootstrap, tps, history) for i in range(config.idempotent_writers)]
    progress: list[Callable[[], int]] = [*(lambda w=w: w.committed for w in txn),
                                         *(lambda w=w: w.acknowledged for w in idem)]
    stop = threading.Event()
    errors: list[BaseException] = []
    threads = [threading.Thread(target=_guarded, args=(w.run, stop, errors), name=getattr(w, "name", "writer"))
               for w in (*txn, *idem)]
    for t in threads:
        t.start()
    try:
        for cycle in range(config.cycles):
            _await_progress(progress, config.progress, errors, f"before fault {cycle + 1}")
            fault = faults[cycle % len(faults)]
            fault.inject(cluster)
            try:
                time.sleep(rng.uniform(0, config.hold_s))
            finally:
                fault.heal(cluster)
            for isolation in Isolation:
                history.add_read(read_all(cluster.bootstrap, tps, isolation, f"after {fault.name} #{cycle + 1}"))
        _await_progress(progress, config.progress, errors, "after the last fault")
    finally:
        stop.set()
        for t in threads:
            t.join(3 * WAIT_S)
    assert not errors, f"a writer failed: {errors[0]!r}"
    wait_stable(cluster.bootstrap, tps)
    for isolation in Isolation:
        history.add_read(read_all(cluster.bootstrap, tps, isolation, "final", final=True))
    return history


def _guarded(target: Callable[[threading.Event], None], stop: threading.Event, errors: list[BaseException]) -> None:
    try:
        target(stop)
    except BaseException as exc:  # reported by run(); the other writers stop too
        errors.append(exc)
        stop.set()


def _await_progress(progress: Sequence[Callable[[], int]], n: int, errors: list[BaseException], when: str) -> None:
    """Wait until every writer has completed n more operations: a liveness check that also paces
    the faults by work done rather than by the clock."""
    start = [p() for p in progress]
    deadline = time.monotonic() + WAIT_S
    while not all(p() >= s + n for p, s in zip(progress, start, strict=True)):
        assert not errors, f"a writer failed {when}: {errors[0]!r}"
        done = [p() - s for p, s in zip(progress, start, strict=True)]
        assert time.monotonic() < deadline, f"no progress {when}: {done} of {n} operations per writer"
        time.sleep(0.05)
