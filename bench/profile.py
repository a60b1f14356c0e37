"""Top frames of a py-spy profile (collapsed stacks: `frame;frame;... count` per line)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path


def read_stacks(path: Path) -> Counter[tuple[str, ...]]:
    stacks: Counter[tuple[str, ...]] = Counter()
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks[tuple(stack.split(";"))] += int(count)
    return stacks


def top_frames(stacks: Counter[tuple[str, ...]], limit: int = 25) -> str:
    total = sum(stacks.values()) or 1
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for stack, count in stacks.items():
        own[stack[-1]] += count
        for frame in set(stack):
            inclusive[frame] += count
    lines = [f"{total} samples (py-spy, 200 Hz, idle excluded)", "", "self %   frame"]
    lines += [f"{100 * n / total:6.1f}   {frame}" for frame, n in own.most_common(limit)]
    lines += ["", "total %  frame"]
    lines += [f"{100 * n / total:6.1f}   {frame}" for frame, n in inclusive.most_common(limit)]
    return "\n".join(lines) + "\n"


def summarize(raw: Path, out: Path) -> str:
    text = top_frames(read_stacks(raw))
    out.write_text(text)
    return text
