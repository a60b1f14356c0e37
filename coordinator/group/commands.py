"""The group coordinator's commands: frozen values, each with the Future its reply goes to.

JoinGroup's and SyncGroup's reply futures double as the waiters GroupMetadata parks, so a
parked request is answered by whichever later command or timer completes the rebalance.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypeVar, assert_never

from kio.schema.errors import ErrorCode

from storage.api import TopicPartition

from ..runtime import ApiError
from ..transaction.metadata import ProducerIdAndEpoch
from .consumer_heartbeat import HeartbeatRequest
from .member import JoinParams, SyncParams
from .metadata import GroupMetadata
from .offsets import OffsetAndMetadata

if TYPE_CHECKING:
    from .consumer_group import ConsumerGroupState
    from .consumer_heartbeat import HeartbeatResult
    from .consumer_persist import ConsumerGroupDescription
    from .member import JoinGroupResult, SyncGroupResult
    from .snapshot import GroupSummary
    from .state import GroupState

__all__ = (
    "Command",
    "CommitOffsets",
    "CompleteTxn",
    "ConsumerGroupDescribe",
    "ConsumerGroupHeartbeat",
    "DeleteGroups",
    "DeleteOffsets",
    "DescribeGroups",
    "FetchOffsets",
    "FetchedOffset",
    "Heartbeat",
    "JoinGroup",
    "LeaveGroup",
    "ListGroups",
    "GroupDeadline",
    "GroupMessage",
    "InstallShard",
    "RetentionCheck",
    "SyncGroup",
    "TopicsDeleted",
    "group_id_of",
    "groups_of",
)

T = TypeVar("T")
# Where a command's answer goes: its result, or a refusal as a value (raised to the caller as
# KafkaError by GroupCoordinator._call).
Reply: TypeAlias = asyncio.Future[T | ApiError]


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinGroup:
    group_id: str
    params: JoinParams
    reply: Reply[JoinGroupResult]


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncGroup:
    group_id: str
    params: SyncParams
    reply: Reply[SyncGroupResult]


@dataclass(frozen=True, slots=True, kw_only=True)
class Heartbeat:
    group_id: str
    member_id: str
    generation_id: int
    group_instance_id: str | None
    reply: Reply[ErrorCode]


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaveGroup:
    group_id: str
    members: tuple[tuple[str, str | None], ...]
    reply: Reply[tuple[ErrorCode, list[ErrorCode]]]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitOffsets:
    """OffsetCommit, or TxnOffsetCommit when producer is set."""

    group_id: str
    member_id: str
    generation_id: int
    group_instance_id: str | None
    offsets: dict[TopicPartition, OffsetAndMetadata]
    # OffsetCommit v2-4 retention_time_ms (-1 or None: the broker's offsets.retention.minutes).
    retention_ms: int | None
    # TxnOffsetCommit: the producer whose transaction holds the offsets pending.
    producer: ProducerIdAndEpoch | None = None
    # The request's version: OffsetCommit's (consumer-protocol members must use v9+, Kafka's
    # validateOffsetCommit), or TxnOffsetCommit's (v6+ has GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH).
    api_version: int = 9
    reply: Reply[dict[TopicPartition, ErrorCode]]


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchOffsets:
    group_id: str
    partitions: tuple[TopicPartition, ...] | None
    require_stable: bool
    # OffsetFetch v9+: who asks (null and -1: an admin or a client outside the group).
    member_id: str | None = None
    member_epoch: int = -1
    reply: Reply[list[FetchedOffset]]


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchedOffset:
    topic_partition: TopicPartition
    committed_offset: int = -1
    committed_leader_epoch: int = -1
    metadata: str = ""
    error: ErrorCode = ErrorCode.none


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeGroups:
    group_ids: tuple[str, ...]
    reply: Reply[list[GroupSummary]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListGroups:
    states: frozenset[str]
    reply: Reply[list[tuple[str, str, GroupState | ConsumerGroupState]]]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteGroups:
    group_ids: tuple[str, ...]
    reply: Reply[dict[str, ErrorCode]]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteOffsets:
    group_id: str
    partitions: tuple[TopicPartition, ...]
    reply: Reply[tuple[ErrorCode, dict[TopicPartition, ErrorCode]]]


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicsDeleted:
    topics: frozenset[str]
    reply: Reply[int]


@dataclass(frozen=True, slots=True, kw_only=True)
class CompleteTxn:
    producer_id: int
    group_ids: frozenset[str] | None
    commit: bool
    reply: Reply[None]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupHeartbeat:
    group_id: str
    request: HeartbeatRequest
    reply: Reply[HeartbeatResult]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupDescribe:
    group_ids: tuple[str, ...]
    reply: Reply[list[ConsumerGroupDescription]]


@dataclass(frozen=True, slots=True, kw_only=True)
class InstallShard:
    """A __consumer_offsets partition replayed in the background: serve its groups, if its
    election (epoch) is still current."""

    partition: int
    epoch: int
    groups: dict[str, GroupMetadata]
    records: int
    seconds: float
    reply: Reply[None]


@dataclass(frozen=True, slots=True)
class GroupDeadline:
    """A group's session, join or sync deadline is due (the runtime's timer, keyed by group)."""

    group_id: str


@dataclass(frozen=True, slots=True)
class RetentionCheck:
    """offsets.retention.check.interval.ms has passed: expire old offsets and empty groups."""


Command = (
    JoinGroup
    | SyncGroup
    | Heartbeat
    | LeaveGroup
    | CommitOffsets
    | FetchOffsets
    | DescribeGroups
    | ListGroups
    | DeleteGroups
    | DeleteOffsets
    | TopicsDeleted
    | CompleteTxn
    | ConsumerGroupHeartbeat
    | ConsumerGroupDescribe
    | InstallShard
)
# What the actor runs: the commands, and the timer's messages (no reply).
GroupMessage = Command | GroupDeadline | RetentionCheck


def group_id_of(cmd: Command) -> str | None:
    """The one group a command is about (None: several, every one, or none)."""
    match cmd:
        case (JoinGroup() | SyncGroup() | Heartbeat() | LeaveGroup() | CommitOffsets() | FetchOffsets()
              | DeleteOffsets() | ConsumerGroupHeartbeat()):
            return cmd.group_id
        case (DescribeGroups() | ListGroups() | DeleteGroups() | TopicsDeleted() | CompleteTxn()
              | ConsumerGroupDescribe() | InstallShard()):
            return None
        case _:
            assert_never(cmd)


def groups_of(cmd: Command) -> Collection[str]:
    """The groups whose shards must be loaded here to serve cmd: none for ListGroups,
    TopicsDeleted, a CompleteTxn of every group, and installing a shard."""
    match cmd:
        case DescribeGroups() | DeleteGroups() | ConsumerGroupDescribe():
            return cmd.group_ids
        case CompleteTxn():
            return cmd.group_ids or ()
        case _:
            group_id = group_id_of(cmd)
            return () if group_id is None else (group_id,)
