"""What a ShareFetch or ShareAcknowledge asks of the share coordinator, and what a ShareFetch gets."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from protocol.errors import KafkaError
from storage.api import TopicPartition

from .partitions import FetchedPartition
from .sessions import SessionPartitions

__all__ = ("AckBatches", "ShareAckRequest", "ShareFetchParams", "ShareFetchResult")

# (topic id, partition) -> (topic partition, [(first offset, last offset, acknowledge types)])
AckBatches = list[tuple[int, int, tuple[int, ...]]]
ShareAckRequest = dict[tuple[uuid.UUID, int], tuple[TopicPartition, AckBatches]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareFetchParams:
    group_id: str
    member_id: str
    epoch: int
    max_wait_ms: int = 0
    max_records: int = 500
    max_bytes: int = 1 << 30
    whole_batches: bool = True
    added: SessionPartitions = field(default_factory=dict)
    forgotten: Sequence[tuple[uuid.UUID, int]] = ()
    acks: ShareAckRequest = field(default_factory=dict)
    fetch: bool = True
    connection: str = ""  # where the request came from: its session ends when that closes


@dataclass(slots=True)
class ShareFetchResult:
    ack_errors: dict[tuple[uuid.UUID, int], KafkaError | None] = field(default_factory=dict)
    fetched: dict[tuple[uuid.UUID, int], FetchedPartition] = field(default_factory=dict)
    errors: dict[tuple[uuid.UUID, int], KafkaError] = field(default_factory=dict)
    lock_duration_ms: int = 0
