"""The harness: python -m bench [--size tiny|small|full] [--only eosbroker|kafka].

Each round starts one broker at a time on loopback (the order alternates from
round to round), measures start-up and idle memory, runs an untimed warm-up and
then every workload in turn as a separate confluent-kafka process, and stops
the broker. A single broker runs at a time, so on this 2-core machine the idle
one never takes CPU from the one being measured.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

from bench import report
from bench.cleaner_load import Dirtier, pass_figures
from bench.cluster import STORES, ClusterRunning, pids, start_cluster
from bench.loadrun import LoadFailed, run_load
from bench.plan import (
    CASES,
    CLEAN_START,
    CLUSTER_CASE_KEYS,
    FAILOVER,
    IDLE_PSS,
    IDLE_PSS_PER_BROKER,
    PEAK_RSS,
    PROCESS_CASE_KEYS,
    PROCESS_CASES,
    PSS_UNDER_W1,
    SCALE_CASES,
    SIZES,
    UNCLEAN_START,
    W7_KEY,
    WARMUP,
    Case,
    Size,
)
from bench.processes import ProcessSetRunning, actual_name, parse_process_counts, process_set_names, start_process_set
from bench.profile import summarize as summarize_profile
from bench.security import PASSWORD, USER
from bench.servers import (
    BENCH_DIR,
    HOST,
    Running,
    Scraper,
    kafka_version,
    machine,
    start_eosbroker,
    start_kafka,
)

BROKERS = ("eosbroker", "kafka")
# --cluster: the local-disk broker, one and three brokers over one PostgreSQL with record data in its
# rows (pg) or in a real S3 server on loopback (os, bench/cluster.py).
CLUSTER_BROKERS = {"eosbroker": 0, "eosbroker-pg1": 1, "eosbroker-pg3": 3, "eosbroker-os1": 1, "eosbroker-os3": 3}
# --metrics-on-off: eosbroker with its Prometheus endpoint on, beside eosbroker with it off.
METRICS_ON, METRICS_OFF = "eosbroker+metrics", "eosbroker"
SCRAPE_INTERVAL_S = 5.0
# --cleaner-on-off: eosbroker with its log cleaner working through a compacted topic kept dirty
# (bench/cleaner_load.py), beside eosbroker with the same topic and log.cleaner.enable=false.
CLEANER_ON, CLEANER_OFF = "eosbroker+cleaner", "eosbroker-cleaner-off"
LOAD_TIMEOUT_S = {"tiny": 120.0, "small": 900.0, "full": 3600.0}
Started = Running | ClusterRunning | ProcessSetRunning


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--size", choices=sorted(SIZES), default="small")
    p.add_argument("--rounds", type=int, help="override the size's number of rounds")
    p.add_argument("--only", choices=(*BROKERS, *CLUSTER_BROKERS),
                   help="run against one broker only (with --cluster, one of its brokers)")
    p.add_argument("--cases", help="comma-separated case keys (default: all), e.g. w1-p1,w6; w7 alone: start-up and "
                   "idle memory only")
    p.add_argument("--out", type=Path, default=BENCH_DIR / "results")
    p.add_argument("--kafka-heap", default="512m")
    p.add_argument("--idle-settle", type=float, default=2.0,
                   help="seconds between start-up and the idle memory reading")
    p.add_argument("--strict", action="store_true", help="exit 1 if any workload failed")
    p.add_argument("--profile", action="store_true",
                   help="run eosbroker under py-spy and write its top frames (figures then "
                        "include the profiler's overhead)")
    p.add_argument("--cluster", action="store_true",
                   help="cluster mode: " + ", ".join(CLUSTER_BROKERS) + f" on {', '.join(CLUSTER_CASE_KEYS)} "
                   f"(or --cases) and {FAILOVER.key} with three brokers, instead of Kafka")
    p.add_argument("--store", choices=tuple(STORES), default="versitygw",
                   help="the S3 server of eosbroker-os1/os3 on loopback (default: versitygw, the cheaper one)")
    p.add_argument("--processes", nargs="?", const="1,2", metavar="COUNTS",
                   help="several processes (python -m broker --processes N): eosbroker (1) and eosbroker-pN for "
                   f"each count (default 1,2) on {', '.join(PROCESS_CASE_KEYS)} (or --cases), instead of Kafka; "
                   "on one local data dir, or over PostgreSQL as eosbroker-pN-pg while the broker refuses that")
    p.add_argument("--scale", action="store_true",
                   help="add the scale cases: " + ", ".join(c.key for c in SCALE_CASES))
    p.add_argument("--render", type=Path, metavar="RESULTS_JSON",
                   help="only write the table and chart again from an earlier results.json")
    p.add_argument("--profile-native", action="store_true",
                   help="as --profile, with C frames (uvloop, kio's readers) in the stacks")
    p.add_argument("--metrics-on-off", action="store_true",
                   help="compare eosbroker with metrics.port set (scraped every "
                        f"{SCRAPE_INTERVAL_S:.0f} s) against eosbroker without it, instead of Kafka")
    p.add_argument("--cleaner-on-off", action="store_true",
                   help="compare eosbroker cleaning a compacted topic kept dirty in the background against "
                        "eosbroker with log.cleaner.enable=false, instead of Kafka (python -m bench.cleaner "
                        "has the cleaner's own figures)")
    args = p.parse_args(argv)
    if args.processes and any((args.cluster, args.metrics_on_off, args.cleaner_on_off, args.only)):
        p.error("--processes picks its own brokers: not with --cluster, --metrics-on-off, --cleaner-on-off or --only")
    try:
        args.process_sets = process_set_names(parse_process_counts(args.processes)) if args.processes else {}
    except ValueError as exc:
        p.error(str(exc))
    return args


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def select_cases(spec: str | None, scale: bool = False) -> tuple[Case, ...]:
    """The cases a --cases list names (w7, measured in every round, is known and adds none)."""
    known = CASES + SCALE_CASES + PROCESS_CASES
    if not spec:
        return CASES + (SCALE_CASES if scale else ())
    wanted = set(spec.split(","))
    unknown = wanted - {c.key for c in known} - {W7_KEY}
    if unknown:
        raise SystemExit(f"unknown case(s): {', '.join(sorted(unknown))}")
    return tuple(c for c in known if c.key in wanted)


def start(name: str, workdir: Path, args: argparse.Namespace, logs: Path,
          rnd: int) -> Started:
    if CLUSTER_BROKERS.get(name):
        return start_cluster(workdir, CLUSTER_BROKERS[name], name,
                             store=args.store if name.startswith("eosbroker-os") else None)
    if args.process_sets.get(name, 1) > 1:
        return start_process_set(workdir, args.process_sets[name], name, progress)
    secure = any(c.load == "handshake" or "listener" in c.params(SIZES["tiny"], "") for c in args.selected)
    if name == "kafka":
        return start_kafka(workdir, heap=args.kafka_heap, secure=secure)
    profiled = args.profile or args.profile_native
    return start_eosbroker(workdir, profile=logs / f"{name}-r{rnd}-pyspy.txt"
                           if profiled else None, native=args.profile_native,
                           metrics=name == METRICS_ON, name=name, secure=secure,
                           settings={"log.cleaner.enable": "false"} if name == CLEANER_OFF else None)


def run_case(case: Case, broker: Started, size: Size, rnd: int, logs: Path,
             timeout: float) -> dict:
    # The machine may be shared: keep its load next to each figure.
    entry: dict = {"round": rnd, "broker": broker.name, "case": case.key,
                   "loadavg_1m": os.getloadavg()[0]}
    t0 = time.perf_counter()
    params = case.params(size, f"{case.key}-r{rnd}")
    security = getattr(broker, "security", None)
    if "listener" in params and security is not None:
        params["client"] = security.client(HOST, params.pop("listener"))
    if case.load == "handshake" and security is not None:
        params |= {"ports": security.ports, "ca": str(security.tls.ca), "user": USER, "password": PASSWORD,
                   "token": security.oidc.token("bench")}
    if case.load == "failover":
        params["pids"] = pids(broker)
    try:
        result = run_load(case.load, params, broker, logs / f"{broker.name}-r{rnd}-{case.key}.log", timeout)
    except LoadFailed as exc:
        entry["error"] = str(exc)
        progress(f"  {case.key:<11} FAILED after {time.perf_counter() - t0:.1f} s "
                 f"(see {logs})")
        return entry
    entry.update({k: result[k] for k in ("metrics", "wall_s", "client_cores", "broker_cores", "store_cores",
                                          "broker_rss_peak_mb", "broker_pss_peak_mb", "client_main_thread_cores",
                                          "info") if k in result})
    if PEAK_RSS in case.metrics:
        entry["metrics"][PEAK_RSS] = result["broker_rss_peak_mb"]
    if case.load == "fill_segments" and isinstance(broker, Running):
        # The fill is set-up; the figures are the two restarts on its data.
        entry["metrics"] = {CLEAN_START: broker.restart(unclean=False), UNCLEAN_START: broker.restart(unclean=True)}
    shown = ", ".join(f"{v:,.1f} {k}" for k, v in result["metrics"].items())
    store = f", store {result['store_cores']:.2f} cores" if "store_cores" in result else ""
    progress(f"  {case.key:<11} {shown}  (client {result['client_cores']:.2f} cores, "
             f"broker {result['broker_cores']:.2f} cores{store}, {result['wall_s']:.1f} s)")
    return entry


def broker_round(name: str, rnd: int, size: Size, cases: tuple[Case, ...],
                 args: argparse.Namespace, logs: Path) -> list[dict]:
    """Start one broker, run every case against it, stop it; return the entries."""
    work = BENCH_DIR / ".work"
    work.mkdir(exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=work))
    progress(f"round {rnd + 1}: starting {name}")
    try:
        try:
            broker = start(name, workdir, args, logs, rnd)
        except (RuntimeError, TimeoutError, OSError) as exc:
            if (workdir / f"{name}.log").exists():
                shutil.copy(workdir / f"{name}.log", logs / f"{name}-r{rnd}-startup.log")
            progress(f"  {name} did not start: {str(exc).splitlines()[0]}")
            return [{"round": rnd, "broker": name, "case": W7_KEY, "error": str(exc)}]
        try:
            return measure(broker, rnd, size, cases, args, logs)
        finally:
            broker.stop()
            for path in ([b.log_path for b in broker.brokers.values()] if isinstance(broker, ClusterRunning)
                         else [broker.log_path]):
                shutil.copy(path, logs / f"{name}-r{rnd}-{path.stem}.log")
            profiled = logs / f"{name}-r{rnd}-pyspy.txt"
            if profiled.exists():
                top = summarize_profile(profiled, logs.parent / f"profile-{name}-r{rnd}.txt")
                progress("  profile top frames:\n" + "\n".join(top.splitlines()[:16]))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def measure(broker: Started, rnd: int, size: Size, cases: tuple[Case, ...],
            args: argparse.Namespace, logs: Path) -> list[dict]:
    timeout = LOAD_TIMEOUT_S[args.size]
    progress(f"  {broker.name} answered after {broker.startup_s:.2f} s")
    time.sleep(args.idle_settle)  # let start-up work finish before reading idle memory
    w7 = {"round": rnd, "broker": broker.name, "case": W7_KEY,
          "metrics": {"start-up s": broker.startup_s, "idle RSS MB": broker.rss_mb(), IDLE_PSS: broker.pss_mb(),
                      IDLE_PSS_PER_BROKER: broker.broker_pss_mb()}}
    entries = [w7]
    if cases:  # --cases w7: start-up and idle memory only
        warm = run_case(WARMUP, broker, size, rnd, logs, timeout)
        entries += [warm] if "error" in warm else []
    dirt = Dirtier(broker.bootstrap) if broker.name in (CLEANER_ON, CLEANER_OFF) else nullcontext()
    with Scraper(broker.metrics_port, SCRAPE_INTERVAL_S), dirt:
        for case in cases:
            if case.load == "failover" and not (isinstance(broker, ClusterRunning) and len(broker.brokers) > 1):
                continue  # no successor to fail over to
            entries.append(run_case(case, broker, size, rnd, logs, timeout))
            if isinstance(broker, ClusterRunning):
                broker.revive()  # after failover: the next case runs on the whole cluster again
    under_w1 = [e for e in entries if e["case"].startswith("w1-") and "broker_rss_peak_mb" in e]
    if under_w1:
        w7["metrics"]["RSS under w1 MB"] = max(e["broker_rss_peak_mb"] for e in under_w1)
        w7["metrics"][PSS_UNDER_W1] = max(e["broker_pss_peak_mb"] for e in under_w1)
    if broker.name == CLEANER_ON and isinstance(broker, Running):
        w7["metrics"].update(pass_figures(broker.log_path))
    return entries


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        paths = report.rerender(args.render)
        print(paths["table"].read_text())
        return 0
    # SIGTERM unwinds like Ctrl-C, so the finally blocks stop the broker under test.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    size = SIZES[args.size]
    if args.rounds:
        size = replace(size, rounds=args.rounds)
    brokers = (args.only,) if args.only else BROKERS
    if args.metrics_on_off:
        brokers = (METRICS_ON, METRICS_OFF)  # the report's ratio is the first over the second
    if args.cleaner_on_off:
        brokers = (CLEANER_ON, CLEANER_OFF)
    default_cases = CLUSTER_CASE_KEYS if args.cluster else PROCESS_CASE_KEYS if args.process_sets else ()
    cases = select_cases(args.cases or ",".join(default_cases), args.scale)
    args.selected = cases  # start() gives the brokers SSL and SASL_SSL listeners when a t case needs them
    if args.cluster:
        brokers = (args.only,) if args.only else tuple(CLUSTER_BROKERS)
        cases = (*cases, FAILOVER) if cases else ()
    if args.process_sets:
        brokers = tuple(args.process_sets)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir = args.out / f"{stamp}-{args.size}"
    logs = run_dir / "logs"
    logs.mkdir(parents=True)
    meta = {"size": args.size, "rounds": size.rounds, "brokers": list(brokers),
            "kafka_version": kafka_version() if "kafka" in brokers else None,
            "scrape_interval_s": SCRAPE_INTERVAL_S if args.metrics_on_off else None,
            "kafka_heap": args.kafka_heap, "machine": machine(), "started": stamp,
            "cases": {c.key: c.title for c in cases}, "profiled": args.profile or args.profile_native,
            "loadavg_start": os.getloadavg(), "object_store": args.store if args.cluster else None}
    entries: list[dict] = []
    for rnd in range(size.rounds):
        order = brokers if rnd % 2 == 0 else tuple(reversed(brokers))
        for name in order:
            entries.extend(broker_round(name, rnd, size, cases, args, logs))
    meta["loadavg_end"] = os.getloadavg()
    seen = {e["broker"] for e in entries}
    meta["brokers"] = [actual_name(b, seen) for b in brokers]  # eosbroker-pN-pg where that ran instead
    paths = report.write(run_dir, meta, entries)
    print(paths["table"].read_text())
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    failed = [e for e in entries if "error" in e]
    return 1 if failed and args.strict else 0
