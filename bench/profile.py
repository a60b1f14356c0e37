"""Top frames of a py-spy profile (collapsed stacks: `frame;frame;... count` per line).

Stacks under an import are start-up work: they are counted apart so the lists
show what the workloads cost. A third list keeps only this project's frames
(broker/, coordinator/, storage/, protocol/) by total time: where to look first.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

PROJECT_DIRS = ("(broker/", "(coordinator/", "(storage/", "(protocol/")
IMPORT_FRAME = "_find_and_load "


def read_stacks(path: Path) -> Counter[tuple[str, ...]]:
    stacks: Counter[tuple[str, ...]] = Counter()
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks[tuple(stack.split(";"))] += int(count)
    return stacks


def _is_import(stack: tuple[str, ...]) -> bool:
    return any(frame.startswith(IMPORT_FRAME) for frame in stack)


def _ranked(counter: Counter[str], total: int, limit: int) -> list[str]:
    return [f"{100 * n / total:6.1f}   {frame}" for frame, n in counter.most_common(limit)]


def top_frames(stacks: Counter[tuple[str, ...]], limit: int = 25) -> str:
    everything = sum(stacks.values()) or 1
    imports = sum(n for s, n in stacks.items() if _is_import(s))
    work = {s: n for s, n in stacks.items() if not _is_import(s)}
    total = sum(work.values()) or 1
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for stack, count in work.items():
        own[stack[-1]] += count
        for frame in set(stack):
            inclusive[frame] += count
    ours = Counter({f: n for f, n in inclusive.items() if any(d in f for d in PROJECT_DIRS)})
    return "\n".join([
        f"{everything} samples (py-spy, 200 Hz, idle excluded); {100 * imports / everything:.1f}% "
        "were start-up imports and are left out below; percentages are of the rest",
        "", "self %   frame", *_ranked(own, total, limit),
        "", "total %  frame", *_ranked(inclusive, total, limit),
        "", "total %  project frame", *_ranked(ours, total, limit),
    ]) + "\n"


def summarize(raw: Path, out: Path) -> str:
    text = top_frames(read_stacks(raw))
    out.write_text(text)
    return text
