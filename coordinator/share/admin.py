"""Share group administration in cluster mode, at the group's coordinator: the share-partition
states live at the share coordinator of each key (state_shards.py), which the group coordinator
reaches as Kafka's persister does, with InitializeShareGroupState (AlterShareGroupOffsets),
ReadShareGroupStateSummary (DescribeShareGroupOffsets) and DeleteShareGroupState
(DeleteShareGroupOffsets, DeleteGroups), batched per share coordinator (ShareStateAdmin, in
broker/share_state_admin.py).

Which share-partitions of a group have state is known, as in Kafka, from its persisted
ShareGroupStatePartitionMetadata record in __consumer_offsets (group_store.py). Only for a group
with state but no such record (written before it was kept) is "every share-partition of the
group" found by asking the share coordinators for every partition of every topic that is not
internal (one request per share coordinator).

An altered share-partition gets the state epoch after its current one: the share coordinator then
fences a write from a share-partition leader that still holds the older state
(FENCED_STATE_EPOCH), and that leader reads the new state again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from protocol.errors import KafkaError
from storage.api import INTERNAL_TOPICS, LogSource

from .state_log import SharePartitionKey, StoredShareState, delivery_complete_count

__all__ = ("ClusterShareAdmin", "ShareStateAdmin", "ShareStateSummary", "Summary")


@dataclass(frozen=True, slots=True)
class ShareStateSummary:
    """What ReadShareGroupStateSummary answers of a share-partition's state."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int = -1

    @classmethod
    def of(cls, stored: StoredShareState) -> ShareStateSummary:
        return cls(stored.state_epoch, stored.leader_epoch, stored.start_offset, delivery_complete_count(stored))


# a key's state as its share coordinator answers: None if it has none
Summary = ShareStateSummary | None | KafkaError


class ShareStateAdmin(Protocol):
    """The share coordinators' administrative calls, each answered per key."""

    async def summaries(self, keys: Sequence[SharePartitionKey]) -> dict[SharePartitionKey, Summary]: ...

    async def initialize(self, states: Mapping[SharePartitionKey, tuple[int, int]],
                         ) -> dict[SharePartitionKey, KafkaError | None]:
        """states: key -> (state epoch, start offset)."""
        ...

    async def delete(self, keys: Sequence[SharePartitionKey]) -> dict[SharePartitionKey, KafkaError | None]: ...


class ClusterShareAdmin:
    def __init__(self, logs: LogSource, admin: ShareStateAdmin) -> None:
        self._logs = logs
        self._admin = admin

    def every_key(self, group_id: str) -> list[SharePartitionKey]:
        """Every share-partition the group could have state for."""
        return [SharePartitionKey(group_id, meta.topic_id, p) for name, meta in sorted(self._logs.topics.items())
                if name not in INTERNAL_TOPICS for p in range(meta.partitions)]

    async def states(self, group_id: str, keys: Sequence[SharePartitionKey] | None = None,
                     candidates: Sequence[SharePartitionKey] | None = None) -> dict[SharePartitionKey, Summary]:
        """The keys' states (keys None: those of the group's share-partitions -- the candidates,
        or every partition when the group's are not known -- that have state, or whose share
        coordinator could not answer)."""
        if keys is not None:
            return await self._admin.summaries(keys)
        found = await self._admin.summaries(self.every_key(group_id) if candidates is None else candidates)
        return {key: got for key, got in found.items() if got is not None}

    async def has_state(self, group_id: str) -> bool:
        return any(isinstance(got, ShareStateSummary) for got in (await self.states(group_id)).values())

    async def alter(self, offsets: Mapping[SharePartitionKey, int]) -> dict[SharePartitionKey, KafkaError | None]:
        """Start each share-partition again at its offset, one state epoch on."""
        current = await self._admin.summaries(list(offsets))
        errors: dict[SharePartitionKey, KafkaError | None] = {}
        states: dict[SharePartitionKey, tuple[int, int]] = {}
        for key, offset in offsets.items():
            got = current.get(key)
            if isinstance(got, KafkaError):
                errors[key] = got
            else:  # 1 past a leader's fresh share-partition (epoch 0) that has not written yet
                states[key] = ((got.state_epoch if got is not None else 0) + 1, offset)
        return errors | await self._admin.initialize(states)

    async def initialize(self, keys: Sequence[SharePartitionKey], state_epoch: int, start_offset: int,
                         ) -> dict[SharePartitionKey, KafkaError | None]:
        """Share-partitions first assigned, initialized at state_epoch (start offset -1: their
        leader starts where share.auto.offset.reset says)."""
        return await self._admin.initialize(dict.fromkeys(keys, (state_epoch, start_offset)))

    async def delete(self, keys: Sequence[SharePartitionKey]) -> dict[SharePartitionKey, KafkaError | None]:
        return await self._admin.delete(keys)
