"""The PNG chart: ratio ours/Kafka per figure, or a single broker's medians."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.ticker import FixedFormatter, FixedLocator, NullFormatter  # noqa: E402

GOOD, BAD, PLAIN = "#2a9d5b", "#c8553d", "#4a6fa5"


def draw(rows: list[dict], brokers: list[str], meta: dict, path: Path) -> None:
    labels = [f"{r['case']} {r['metric']}" for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.38 * max(len(rows), 4) + 1.4))
    if len(brokers) == 2:
        vs_kafka = "kafka" in brokers
        _ratios(ax, rows, labels, "eosbroker / Kafka" if vs_kafka else " / ".join(brokers))
        title = (f"eosbroker / Apache Kafka {meta.get('kafka_version') or ''}" if vs_kafka
                 else " / ".join(brokers))
    else:
        _medians(ax, rows, labels, brokers[0])
        title = f"{brokers[0]} alone"
    ax.set_title(f"{title} - size {meta['size']}, {meta['rounds']} round(s), medians")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _ratios(ax, rows: list[dict], labels: list[str], pair: str) -> None:  # type: ignore[no-untyped-def]
    values = [r.get("ratio") or 1.0 for r in rows]
    colors = [PLAIN if r.get("ratio") is None else (GOOD if r["favours_ours"] else BAD)
              for r in rows]
    # Bars grow from 1.0 (parity) on a log axis, so 2x and 0.5x look the same size.
    ax.barh(labels, [v - 1.0 for v in values], left=1.0, color=colors)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    lo, hi = min(values + [0.5]) / 1.5, max(values + [2.0]) * 3
    ax.set_xlim(lo, hi)
    ticks = [t for t in (0.01, 0.03, 0.1, 0.25, 0.5, 1, 2, 4, 10, 30, 100) if lo <= t <= hi]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FixedFormatter([f"{t:g}x" for t in ticks]))
    ax.xaxis.set_minor_formatter(NullFormatter())
    for y, r in enumerate(rows):
        ratio = r.get("ratio")
        text = f"{ratio:.2f}x ({r['better']} is better)" if ratio else "no ratio (failed)"
        x = max(ratio or 1.0, 1.0)
        ax.text(x, y, " " + text, va="center", fontsize=8)
    ax.set_xlabel(f"{pair}, medians (green favours the first)")


def _medians(ax, rows: list[dict], labels: list[str], broker: str) -> None:  # type: ignore[no-untyped-def]
    values = [(r.get(broker) or {}).get("median", 0.0) for r in rows]
    ax.barh(labels, values, color=PLAIN)
    if any(v > 0 for v in values):
        ax.set_xscale("log")
    for y, v in enumerate(values):
        ax.text(v if v else 1.0, y, f" {v:,.2f}" if v else " failed", va="center", fontsize=8)
    ax.set_xlabel(f"{broker} median (unit in the label)")
