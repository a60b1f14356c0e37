"""Entry point of one load-generator process: python -m bench.load NAME --bootstrap B --params JSON."""

from __future__ import annotations

import argparse
import json
import sys

from bench.load import (
    ctp,
    e2e_latency,
    failover,
    handshake,
    java_txn,
    kafka_perf,
    micro_produce,
    produce,
    read_committed,
    rebalance,
    scale,
    share,
    txn_latency,
    txn_produce,
)

WORKLOADS = {
    "produce": produce.run,
    "txn_produce": txn_produce.run,
    "read_committed": read_committed.run,
    "ctp": ctp.run,
    "txn_latency": txn_latency.run,
    "e2e_latency": e2e_latency.run,
    "rebalance": rebalance.run,
    "failover": failover.run,
    "producer_perf": kafka_perf.producer_perf,
    "consumer_perf": kafka_perf.consumer_perf,
    "java_e2e_latency": kafka_perf.end_to_end_latency,
    "java_txn_latency": java_txn.run,
    "many_producers": scale.many_producers,
    "big_group": scale.big_group,
    "connections": scale.connections,
    "fill_segments": scale.fill_segments,
    "handshake": handshake.run,
    "micro_produce": micro_produce.run,
    "producer_perf_many": kafka_perf.producer_perf_many,
    "share_perf": share.share_perf,
    "share_redelivery": share.share_redelivery,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load")
    parser.add_argument("name", choices=sorted(WORKLOADS))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--params", required=True, help="JSON object of the workload's parameters")
    args = parser.parse_args(argv)
    WORKLOADS[args.name](args.bootstrap, json.loads(args.params))
    return 0


if __name__ == "__main__":
    sys.exit(main())
