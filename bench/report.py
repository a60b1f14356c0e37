"""Summaries of a run: the terminal table, the JSON of every figure, the PNG chart.

Figures are medians over rounds with the spread (min-max). The ratio is always
ours/Kafka; whether that favours us depends on the metric's direction
(throughput: higher is better; latency, start-up, memory: lower is better).
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

from bench.plan import HIGHER, metric_directions

OURS, THEIRS = "eosbroker", "kafka"
CLIENT_BOUND_CORES = 0.8   # the load's Python thread near a full core: it is the limit
SATURATED_CORES = 1.7      # client + broker near this 2-core machine's total


def spread(values: list[float]) -> dict | None:
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def _values(entries: list[dict], broker: str, case: str, key: str, metric: str | None = None
            ) -> list[float]:
    out = []
    for e in entries:
        if e["broker"] == broker and e["case"] == case and "error" not in e:
            value = e.get(key, {}).get(metric) if metric else e.get(key)
            if value is not None:
                out.append(value)
    return out


def cpu_note(client: dict | None, main_thread: dict | None, broker: dict | None) -> str:
    if client is None:
        return ""
    if main_thread is not None and main_thread["median"] >= CLIENT_BOUND_CORES:
        return "client-bound"
    if broker is not None and client["median"] + broker["median"] >= SATURATED_CORES:
        return "CPU-saturated"
    return ""


CLUSTER3 = "eosbroker-pg3"
OBJECTS3 = "eosbroker-os3"
PROCESS_SET = re.compile(r"eosbroker-p\d+(-pg)?")  # --processes: eosbroker-p2, or eosbroker-p2-pg


def summarize(entries: list[dict], brokers: list[str]) -> list[dict]:
    rows = []
    for (case, metric), way in metric_directions().items():
        row: dict = {"case": case, "metric": metric, "better": way}
        for b in brokers:
            row[b] = spread(_values(entries, b, case, "metrics", metric))
            client = spread(_values(entries, b, case, "client_cores"))
            broker_cpu = spread(_values(entries, b, case, "broker_cores"))
            main_thread = spread(_values(entries, b, case, "client_main_thread_cores"))
            row[f"{b} client cores"] = client and client["median"]
            row[f"{b} broker cores"] = broker_cpu and broker_cpu["median"]
            store_cpu = spread(_values(entries, b, case, "store_cores"))
            row[f"{b} store cores"] = store_cpu and store_cpu["median"]
            row[f"{b} client main thread cores"] = main_thread and main_thread["median"]
            row[f"{b} note"] = cpu_note(client, main_thread, broker_cpu)
            row[f"{b} errors"] = sum(1 for e in entries
                                     if e["broker"] == b and e["case"] == case and "error" in e)
        ours, theirs = compared(brokers)
        if all(row.get(b) for b in (ours, theirs)) and row[theirs]["median"]:
            ratio = row[ours]["median"] / row[theirs]["median"]
            row["ratio"] = ratio
            row["favours_ours"] = ratio >= 1 if way == HIGHER else ratio <= 1
        if any(row.get(b) or row[f"{b} errors"] for b in brokers):
            rows.append(row)
    return rows


def compared(brokers: list[str]) -> tuple[str, str]:
    """The pair the ratio compares: eosbroker over Kafka, or the first broker over the second
    (eosbroker with metrics on over off)."""
    if OBJECTS3 in brokers and OURS in brokers:  # --cluster: three brokers over the object store / local disk
        return OBJECTS3, OURS
    if CLUSTER3 in brokers and OURS in brokers:  # three brokers over PostgreSQL rows / local disk
        return CLUSTER3, OURS
    sets = [b for b in brokers if PROCESS_SET.fullmatch(b)]
    if sets and OURS in brokers:  # --processes: the first several-process set over one process
        return sets[0], OURS
    if set(brokers) == {OURS, THEIRS} or len(brokers) != 2:
        return OURS, THEIRS
    return brokers[0], brokers[1]


def _fmt(stats: dict | None, errors: int) -> str:
    if stats is None:
        return "failed" if errors else "-"
    m, lo, hi = stats["median"], stats["min"], stats["max"]
    text = f"{m:,.2f} [{lo:,.2f}-{hi:,.2f}]" if m < 100 else f"{m:,.0f} [{lo:,.0f}-{hi:,.0f}]"
    return text + (f" ({errors} failed)" if errors else "")


def _cores(row: dict, brokers: list[str], kind: str) -> str:
    return "/".join("-" if row.get(f"{b} {kind} cores") is None else f"{row[f'{b} {kind} cores']:.2f}"
                    for b in brokers)


def table(rows: list[dict], brokers: list[str], store: str | None = None) -> str:
    ours, theirs = compared(brokers)
    head = ["case", "metric", *brokers, "ours/kafka" if theirs == THEIRS else f"{ours}/{theirs}", "better",
            "client cores",
            "broker cores", "note"]
    stores = any(row.get(f"{b} store cores") is not None for row in rows for b in brokers)
    if stores:  # the object store's own CPU, beside the brokers' (and PostgreSQL's)
        head.insert(-1, "store cores")
    lines = [head]
    for row in rows:
        ratio = row.get("ratio")
        mark = "" if ratio is None else (" ok" if row["favours_ours"] else " !!")
        notes = "; ".join(f"{b}: {row[f'{b} note']}" for b in brokers if row[f"{b} note"])
        cores = [_cores(row, brokers, "client"), _cores(row, brokers, "broker")]
        if stores:
            cores.append(_cores(row, brokers, "store"))
        lines.append([row["case"], row["metric"],
                      *(_fmt(row[b], row[f"{b} errors"]) for b in brokers),
                      "-" if ratio is None else f"{ratio:.2f}{mark}", row["better"], *cores, notes])
    widths = [max(len(str(r[i])) for r in lines) for i in range(len(head))]
    text = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    legend = (f"medians [min-max] over rounds; cores as {'/'.join(brokers)}; ok/!! = ratio "
              f"favours {ours} or not" + (f"; store cores: {store}'s" if stores and store else ""))
    return "\n".join(text + ["", legend]) + "\n"


def write(run_dir: Path, meta: dict, entries: list[dict]) -> dict[str, Path]:
    brokers = meta["brokers"]
    rows = summarize(entries, brokers)
    paths = {"table": run_dir / "table.txt", "json": run_dir / "results.json",
             "chart": run_dir / "chart.png"}
    paths["table"].write_text(table(rows, brokers, meta.get("object_store")))
    paths["json"].write_text(json.dumps({"meta": meta, "summary": rows, "runs": entries},
                                        indent=1) + "\n")
    from bench.chart import draw  # matplotlib is slow to import; only needed here
    draw(rows, brokers, meta, paths["chart"])
    return paths


def rerender(results_json: Path) -> dict[str, Path]:
    """Write the table and chart again from a results.json (e.g. after a report change)."""
    data = json.loads(results_json.read_text())
    return write(results_json.parent, data["meta"], data["runs"])
