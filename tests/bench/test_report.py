"""The pure parts of the harness: percentiles, summaries, ratios, the table."""

from __future__ import annotations

import math

from bench.load.common import percentile
from bench.probe import CORRELATION_ID, SIZE, api_versions_request
from bench.report import cpu_note, summarize, table


def entry(broker: str, case: str, rnd: int = 0, **metrics: float) -> dict:
    return {"round": rnd, "broker": broker, "case": case, "metrics": metrics,
            "client_cores": 0.5, "broker_cores": 0.5}


def test_percentile_is_nearest_rank() -> None:
    values = list(range(1, 101))
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile(values, 100) == 100
    assert percentile([7.0], 99) == 7.0
    assert math.isnan(percentile([], 50))


def test_ratio_is_ours_over_kafka_and_direction_decides_who_it_favours() -> None:
    entries = [entry("eosbroker", "w1-p1", **{"MB/s": 30.0}), entry("kafka", "w1-p1", **{"MB/s": 60.0}),
               entry("eosbroker", "w6", **{"p99 ms": 2.0}), entry("kafka", "w6", **{"p99 ms": 4.0})]
    rows = {(r["case"], r["metric"]): r for r in summarize(entries, ["eosbroker", "kafka"])}
    assert rows["w1-p1", "MB/s"]["ratio"] == 0.5
    assert rows["w1-p1", "MB/s"]["favours_ours"] is False
    assert rows["w6", "p99 ms"]["ratio"] == 0.5
    assert rows["w6", "p99 ms"]["favours_ours"] is True


def test_metrics_on_off_ratio_is_on_over_off() -> None:
    brokers = ["eosbroker+metrics", "eosbroker"]
    entries = [entry("eosbroker+metrics", "w1-p1", **{"MB/s": 99.0}), entry("eosbroker", "w1-p1", **{"MB/s": 100.0})]
    rows = [r for r in summarize(entries, brokers) if r["case"] == "w1-p1" and r["metric"] == "MB/s"]
    assert rows[0]["ratio"] == 0.99
    assert "eosbroker+metrics/eosbroker" in table(rows, brokers).splitlines()[0]


def test_median_and_spread_over_rounds() -> None:
    entries = [entry("kafka", "w1-p1", rnd, **{"MB/s": v}) for rnd, v in enumerate([5.0, 1.0, 3.0])]
    (row, *_) = [r for r in summarize(entries, ["kafka"]) if r["metric"] == "MB/s"]
    assert row["kafka"] == {"median": 3.0, "min": 1.0, "max": 5.0, "n": 3}
    assert "ratio" not in row


def test_failures_are_counted_and_shown() -> None:
    entries = [{"round": 0, "broker": "eosbroker", "case": "w4", "error": "boom"},
               entry("kafka", "w4", **{"txns/s": 10.0, "records/s": 5000.0})]
    rows = [r for r in summarize(entries, ["eosbroker", "kafka"]) if r["case"] == "w4"]
    assert all(r["eosbroker errors"] == 1 and "ratio" not in r for r in rows)
    assert "failed" in table(rows, ["eosbroker", "kafka"])


def test_probe_request_is_a_sized_api_versions_v0_frame() -> None:
    frame = api_versions_request()
    assert SIZE.unpack_from(frame)[0] == len(frame) - 4
    assert frame[4:8] == b"\x00\x12\x00\x00"  # api key 18, version 0
    assert int.from_bytes(frame[8:12], "big") == CORRELATION_ID


def test_client_bound_follows_the_loads_python_thread() -> None:
    def s(x: float) -> dict:
        return {"median": x}

    assert cpu_note(s(1.3), s(0.95), s(0.2)) == "client-bound"
    assert cpu_note(s(1.3), s(0.4), s(0.2)) == ""
    assert cpu_note(s(0.8), s(0.5), s(1.1)) == "CPU-saturated"
    assert cpu_note(None, None, s(1.5)) == ""


def test_profile_summary_sets_imports_apart_and_ranks_project_frames() -> None:
    from collections import Counter

    from bench.profile import top_frames

    stacks = Counter({
        ("main (m.py:1)", "_find_and_load (<frozen>:1)", "exec (x.py:2)"): 50,
        ("main (m.py:1)", "handle (broker/connection.py:9)", "write (libc)"): 30,
        ("main (m.py:1)", "append (storage/log.py:5)"): 20,
    })
    text = top_frames(stacks)
    assert "50.0% were start-up imports" in text
    project = text.split("total %  project frame")[1]
    assert project.index("broker/connection.py") < project.index("storage/log.py")
    assert " 60.0   handle (broker/connection.py:9)" in project
    assert "exec (x.py:2)" not in text


def test_object_store_cases_show_store_cores_beside_broker_cores_and_compare_to_local_disk() -> None:
    brokers = ["eosbroker", "eosbroker-pg3", "eosbroker-os3"]
    entries = [entry("eosbroker", "w1-p6", **{"MB/s": 100.0}), entry("eosbroker-pg3", "w1-p6", **{"MB/s": 20.0}),
               {**entry("eosbroker-os3", "w1-p6", **{"MB/s": 60.0}), "store_cores": 0.25}]
    rows = [r for r in summarize(entries, brokers) if r["case"] == "w1-p6" and r["metric"] == "MB/s"]
    assert rows[0]["ratio"] == 0.6  # os3 over the local-disk broker
    text = table(rows, brokers, "versitygw")
    head, _, line = text.splitlines()[:3]
    assert "eosbroker-os3/eosbroker" in head and "store cores" in head
    assert line.split()[-1] == "-/-/0.25"  # store cores: only os3 has a store
    assert text.rstrip().endswith("store cores: versitygw's")
