"""Spark Structured Streaming at read_committed over a three-broker cluster (issue 10), and over
four processes of one `--processes 4` command (issue 34), a local set and over PostgreSQL: the
pipeline's job reads while a broker is killed with -9 and later restarted; its output holds
exactly the committed events, once each."""

from __future__ import annotations

import signal

import pytest

from pipeline.job import read_transfer_files, start
from pipeline.transfers import Transfer, committed_transfers, multiset
from tests.e2e.cluster.conftest import CLUSTER_SETTINGS, Cluster
from tests.e2e.cluster.test_processes import spread_evenly
from tests.e2e.cluster.test_processes import start as start_processes
from tests.e2e.spark_support import job_config, new_topic, plan, write_transactions
from tests.supervised import Supervised

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


def files(spark, cfg) -> list[Transfer]:  # type: ignore[no-untyped-def]
    return [Transfer.from_row(r) for r in read_transfer_files(spark, cfg)]


def exactly_the_commits(spark, cfg, batches) -> None:  # type: ignore[no-untyped-def]
    """The job's output holds every committed transfer once and no aborted one."""
    expected = [t for b in batches for t in committed_transfers(b)]
    aborted = {t for b in batches for p in b if not p.commit for t in p.transfers}
    got = multiset(files(spark, cfg))
    assert got == multiset(expected)
    assert aborted and not aborted & set(got)


@pytest.mark.timeout(900)
def test_streaming_query_reads_exactly_the_commits_across_a_broker_kill_and_restart(
        spark, cluster: Cluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    cluster.start(1, 2, 3)
    bs = cluster.bootstrap()
    topic = new_topic(bs, "cluster-stream", partitions=6)
    cluster.settled(topic)  # every broker leads some of its partitions
    cfg = job_config(bs, topic, tmp_path / "out", output_topic=None, interval_seconds=1.0)
    queries = start(spark, cfg)
    batches = []
    try:
        batches.append(plan(20, seed=11, prefix="a"))
        write_transactions(bs, topic, batches[-1], "cluster-spark")
        queries[0].processAllAvailable()

        cluster.kill(2)  # its partitions and coordinator shards move to 1 and 3 within the lease
        # The query reads on meanwhile; the writer waits for the move, since the LSO check it ends
        # with (pipeline/watermarks.py) is a plain ListOffsets that a leader dying under it fails.
        cluster.settled(topic)
        survivors = cluster.bootstrap()
        batches.append(plan(20, seed=12, prefix="b"))
        write_transactions(survivors, topic, batches[-1], "cluster-spark")
        queries[0].processAllAvailable()

        cluster.start(2)  # rejoins and takes its share back
        cluster.settled(topic)
        batches.append(plan(20, seed=13, prefix="c"))
        write_transactions(bs, topic, batches[-1], "cluster-spark")
        queries[0].processAllAvailable()
        assert queries[0].exception() is None
    finally:
        for q in queries:
            q.stop()
    exactly_the_commits(spark, cfg, batches)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", ["local", "cluster"])
def test_streaming_query_reads_exactly_the_commits_of_four_processes_across_a_process_kill(
        spark, mode: str, request: pytest.FixtureRequest, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The same over `--processes 4` (docs/processes.md), as a local set sharing one data dir and
    over PostgreSQL: process 3 is killed with -9 while the query runs, and the supervisor starts it
    again."""
    settings = dict(CLUSTER_SETTINGS)
    if mode == "cluster":
        settings["cluster.url"] = request.getfixturevalue("pg_url")
    procs = start_processes(Supervised(tmp_path, 4, settings))
    bs = ",".join(f"127.0.0.1:{procs.port_of(n)}" for n in procs.node_ids)
    try:
        topic = new_topic(bs, "procs-stream", partitions=8)
        spread_evenly(procs, topic, 8)
        cfg = job_config(bs, topic, tmp_path / "out", output_topic=None, interval_seconds=1.0)
        queries = start(spark, cfg)
        batches = []
        try:
            batches.append(plan(20, seed=21, prefix="a"))
            write_transactions(bs, topic, batches[-1], "procs-spark")
            queries[0].processAllAvailable()
            procs.wait_restarted(3, procs.signal(3, signal.SIGKILL))
            spread_evenly(procs, topic, 8)
            batches.append(plan(20, seed=22, prefix="b"))
            write_transactions(bs, topic, batches[-1], "procs-spark")
            queries[0].processAllAvailable()
            assert queries[0].exception() is None
        finally:
            for q in queries:
                q.stop()
    finally:
        assert procs.stop() == 0
    assert not procs.problems(), "a process misbehaved:\n" + "\n".join(procs.problems())
    exactly_the_commits(spark, cfg, batches)
