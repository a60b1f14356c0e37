"""The PNG chart: ratio ours/Kafka per figure, or a single broker's medians."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

GOOD, BAD, PLAIN = "#2a9d5b", "#c8553d", "#4a6fa5"


def draw(rows: list[dict], brokers: list[str], meta: dict, path: Path) -> None:
    labels = [f"{r['case']} {r['metric']}" for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.38 * max(len(rows), 4) + 1.4))
    if len(brokers) == 2:
        _ratios(ax, rows, labels)
        title = f"eosbroker / Apache Kafka {meta.get('kafka_version') or ''}"
    else:
        _medians(ax, rows, labels, brokers[0])
        title = f"{brokers[0]} alone"
    ax.set_title(f"{title} - size {meta['size']}, {meta['rounds']} round(s), medians")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _ratios(ax, rows: list[dict], labels: list[str]) -> None:  # type: ignore[no-untyped-def]
    values = [r.get("ratio") or 0.0 for r in rows]
    colors = [PLAIN if r.get("ratio") is None else (GOOD if r["favours_ours"] else BAD)
              for r in rows]
    ax.barh(labels, values, color=colors)
    ax.axvline(1.0, color="black", linewidth=0.8)
    if any(v > 0 for v in values):
        ax.set_xscale("log")
    for y, (v, r) in enumerate(zip(values, rows, strict=True)):
        text = f"{v:.2f}x ({r['better']} is better)" if v else "no ratio (failed)"
        ax.text(v if v else 1.0, y, " " + text, va="center", fontsize=8)
    ax.set_xlabel("eosbroker / Kafka (green favours eosbroker)")


def _medians(ax, rows: list[dict], labels: list[str], broker: str) -> None:  # type: ignore[no-untyped-def]
    values = [(r.get(broker) or {}).get("median", 0.0) for r in rows]
    ax.barh(labels, values, color=PLAIN)
    if any(v > 0 for v in values):
        ax.set_xscale("log")
    for y, v in enumerate(values):
        ax.text(v if v else 1.0, y, f" {v:,.2f}" if v else " failed", va="center", fontsize=8)
    ax.set_xlabel(f"{broker} median (unit in the label)")
