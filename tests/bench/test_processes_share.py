"""The pure parts of `python -m bench --processes` (issue 34) and of the share-group cases (issue 35):
the counts and broker names, the fallback's name, the ratio's pair, the figures a load's output gives."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from bench.load.share import parse_share_perf
from bench.loadrun import broker_cost
from bench.plan import CPU_PER_GB, CPU_PER_RECORD, PROCESS_CASE_KEYS, SHARE_CASES, SIZES, metric_directions
from bench.processes import actual_name, consecutive_free_ports, parse_process_counts, process_set_names, refusal
from bench.report import compared, summarize, table
from bench.run import parse_args, select_cases


def test_counts_become_eosbroker_and_eosbroker_pn() -> None:
    assert parse_process_counts("1,2,4") == (1, 2, 4)
    assert process_set_names((1, 2, 4)) == {"eosbroker": 1, "eosbroker-p2": 2, "eosbroker-p4": 4}
    assert process_set_names((2,)) == {"eosbroker-p2": 2}


@pytest.mark.parametrize("spec", ["0,2", "2,2", "two", "1,,2", ""])
def test_bad_counts_are_refused_with_the_option_named(spec: str) -> None:
    with pytest.raises(ValueError, match="--processes"):
        parse_process_counts(spec)


def test_processes_alone_defaults_to_one_and_two_on_its_cases() -> None:
    args = parse_args(["--processes"])
    assert args.process_sets == {"eosbroker": 1, "eosbroker-p2": 2}
    assert {c.key for c in select_cases(",".join(PROCESS_CASE_KEYS))} == set(PROCESS_CASE_KEYS)


@pytest.mark.parametrize("other", [["--cluster"], ["--only", "kafka"], ["--metrics-on-off"]])
def test_processes_does_not_mix_with_other_broker_choices(other: list[str],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--processes", "1,2", *other])
    assert "--processes picks its own brokers" in capsys.readouterr().err


def test_a_refused_local_set_is_reported_under_its_pg_name() -> None:
    assert actual_name("eosbroker-p2", {"eosbroker", "eosbroker-p2-pg"}) == "eosbroker-p2-pg"
    assert actual_name("eosbroker-p2", {"eosbroker", "eosbroker-p2"}) == "eosbroker-p2"
    assert actual_name("eosbroker", {"eosbroker", "eosbroker-p2-pg"}) == "eosbroker"


def _entry(broker: str, **metrics: float) -> dict:
    return {"round": 0, "broker": broker, "case": "m1-produce", "metrics": metrics,
            "client_cores": 0.3, "broker_cores": 1.0}


@pytest.mark.parametrize("several", ["eosbroker-p2", "eosbroker-p2-pg"])
def test_ratio_is_the_first_process_set_over_one_process(several: str) -> None:
    brokers = ["eosbroker", several, "eosbroker-p4"]
    assert compared(brokers) == (several, "eosbroker")
    entries = [_entry("eosbroker", **{"MB/s": 100.0, CPU_PER_GB: 5.0}),
               _entry(several, **{"MB/s": 170.0, CPU_PER_GB: 5.5})]
    rows = {r["metric"]: r for r in summarize(entries, brokers) if r["case"] == "m1-produce"}
    assert rows["MB/s"]["ratio"] == pytest.approx(1.7) and rows["MB/s"]["favours_ours"]
    assert rows[CPU_PER_GB]["ratio"] == pytest.approx(1.1) and not rows[CPU_PER_GB]["favours_ours"]
    assert f"{several}/eosbroker" in table(list(rows.values()), brokers).splitlines()[0]


def test_cluster_and_kafka_pairs_are_unchanged() -> None:
    assert compared(["eosbroker", "eosbroker-pg1", "eosbroker-pg3"]) == ("eosbroker-pg3", "eosbroker")
    assert compared(["eosbroker", "kafka"]) == ("eosbroker", "kafka")


def test_broker_cost_is_per_gb_moved_or_per_record_delivered() -> None:
    assert broker_cost({"bytes": 2e9}, 10.0) == {CPU_PER_GB: 5.0}
    assert broker_cost({"delivered_records": 4000}, 0.5) == {CPU_PER_RECORD: 125.0}
    assert broker_cost({"records": 200}, 1.0) == {}  # k4-e2e's count of round trips is no delivery


def test_share_perf_summary_is_read_from_its_last_line() -> None:
    out = ("Share consumer 1 having client id c-1 consumption metrics- 2026-12-07 08:32:58:998, "
           "2026-12-07 08:33:04:344, 1.0000, 0.5000, 250.0000, 1000, 2000\n"
           "2026-12-07 08:32:58:998, 2026-12-07 08:33:04:348, 1.9531, 0.9766, 1000.0000, 2000, 2000\n")
    assert parse_share_perf(out) == (2000, 1000.0)
    with pytest.raises(ValueError, match="no summary"):
        parse_share_perf("WARNING: Exiting before consuming the expected number of records\n")


def test_share_cases_scale_with_the_size_and_report_cpu_per_record() -> None:
    directions = metric_directions()
    for case in SHARE_CASES:
        assert all((case.key, m) in directions for m in case.metrics)
    c1, c4, redelivery = SHARE_CASES
    assert c1.params(SIZES["small"], "t")["consumers"] == 1 and c4.params(SIZES["small"], "t")["consumers"] == 4
    assert CPU_PER_RECORD in c4.metrics
    assert redelivery.params(SIZES["tiny"], "t")["samples"] < redelivery.params(SIZES["full"], "t")["samples"]


def test_the_brokers_one_line_refusal_is_found_in_its_log(tmp_path: Path) -> None:
    log = tmp_path / "eosbroker-p2.log"
    log.write_text("eosbroker: broker.processes=2 needs cluster.url for now: processes sharing one local data dir "
                   "are not supported yet (docs/processes.md)\n")
    assert "needs cluster.url" in (refusal(log) or "")
    log.write_text("eosbroker: listener PLAINTEXT: port 9092 is in use\n")
    assert refusal(log) is None  # any other failure to start is not a reason to run over PostgreSQL


def test_a_set_gets_consecutive_free_ports() -> None:
    base = consecutive_free_ports(4)
    for port in range(base, base + 4):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))  # each one free
