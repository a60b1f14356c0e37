"""CoordinatorTimer: deadlines by key, as Kafka's CoordinatorTimer (schedule, cancel, fire).

A coordinator schedules one deadline per key (a group's next session or rebalance deadline, the
next offset-retention check); scheduling a key again replaces its deadline, so a heartbeat that
moves a session on needs no cancel. Pure: the runtime asks when the next one is due and takes
the due messages; time is the caller's clock, in ms.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ("CoordinatorTimer",)

M = TypeVar("M")


class CoordinatorTimer(Generic[M]):
    def __init__(self) -> None:
        self._due: dict[Hashable, tuple[int, M]] = {}
        # (deadline, order, key); entries whose key was rescheduled or cancelled are skipped
        self._heap: list[tuple[int, int, Hashable]] = []
        self._order = itertools.count()

    def schedule(self, key: Hashable, deadline_ms: int, message: M) -> None:
        self._due[key] = (deadline_ms, message)
        heapq.heappush(self._heap, (deadline_ms, next(self._order), key))

    def cancel(self, key: Hashable) -> None:
        self._due.pop(key, None)

    def next_deadline_ms(self) -> int | None:
        while self._heap and self._stale(self._heap[0]):
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> list[M]:
        """The messages of every deadline at or before now_ms, earliest first; they are removed."""
        due: list[M] = []
        while self._heap and self._heap[0][0] <= now_ms:
            entry = heapq.heappop(self._heap)
            if not self._stale(entry):
                due.append(self._due.pop(entry[2])[1])
        return due

    def _stale(self, entry: tuple[int, int, Hashable]) -> bool:
        current = self._due.get(entry[2])
        return current is None or current[0] != entry[0]
