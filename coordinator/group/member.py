"""Members of a classic group and the values that go in and out of GroupMetadata.

A parked JoinGroup or SyncGroup is represented by an opaque *waiter* that the caller hands in
(the actor passes a Future, tests pass strings). GroupMetadata never resolves a waiter itself: it
returns (waiter, result) pairs in an Outcome, which classic_shard.py turns into effects the actor
delivers after writing the group record when Outcome.store_group says so.
"""

from __future__ import annotations

import struct
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from kio.schema.errors import ErrorCode

__all__ = (
    "JoinGroupResult",
    "JoinParams",
    "JoinedMember",
    "MemberIdentity",
    "MemberMetadata",
    "Outcome",
    "Protocol",
    "SyncGroupResult",
    "SyncParams",
    "identity",
    "parse_subscribed_topics",
)

# (protocol name, member metadata): the assignor name and its ConsumerProtocolSubscription bytes.
Protocol = tuple[str, bytes]


class MemberIdentity(TypedDict):
    """Who a member is: the same in each form a member takes (its JoinGroup, the live member, its
    __consumer_offsets record, its DescribeGroups summary), so each is built from the other by it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str


class _Identified(typing.Protocol):
    @property
    def member_id(self) -> str: ...
    @property
    def group_instance_id(self) -> str | None: ...
    @property
    def client_id(self) -> str: ...
    @property
    def client_host(self) -> str: ...


def identity(m: _Identified, *, member_id: str | None = None) -> MemberIdentity:
    """m's identity (under member_id: a joining member's new id)."""
    return {"member_id": m.member_id if member_id is None else member_id, "group_instance_id": m.group_instance_id,
            "client_id": m.client_id, "client_host": m.client_host}


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinParams:
    """What a JoinGroup request asks of the group, whatever its version."""

    member_id: str = ""
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[Protocol, ...]
    # JoinGroup v4+: a first join with an empty member id gets MEMBER_ID_REQUIRED.
    require_known_member_id: bool = False
    # JoinGroup v9+ (KIP-814): a rejoining static leader of a stable group skips assignment.
    supports_skip_assignment: bool = False
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncParams:
    """What a SyncGroup request says, whatever its version; the leader's carries the assignments."""

    member_id: str
    generation_id: int
    group_instance_id: str | None = None
    protocol_type: str | None = None  # v5+: checked against the group's
    protocol_name: str | None = None
    assignments: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinGroupResult:
    member_id: str
    error: ErrorCode = ErrorCode.none
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    # Only the leader gets the members and their subscriptions.
    members: tuple[JoinedMember, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncGroupResult:
    error: ErrorCode = ErrorCode.none
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(slots=True, kw_only=True)
class Outcome:
    """What one call produced: replies for parked requests, and whether to persist the group."""

    replies: list[tuple[object, JoinGroupResult | SyncGroupResult]] = field(default_factory=list)
    store_group: bool = False


@dataclass(slots=True, kw_only=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    supported_protocols: tuple[Protocol, ...]
    assignment: bytes = b""
    join_waiter: object | None = None
    sync_waiter: object | None = None
    # A member that joined during the current rebalance and has not got a generation yet.
    is_new: bool = False
    heartbeat_deadline_ms: int = 0

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    def schedule_heartbeat(self, now_ms: int) -> None:
        """The member was heard from: its session runs from now."""
        self.heartbeat_deadline_ms = now_ms + self.session_timeout_ms

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.supported_protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.supported_protocols:
            if name == protocol:
                return data
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: Sequence[Protocol]) -> bool:
        return tuple(protocols) == self.supported_protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")


def parse_subscribed_topics(subscription: bytes) -> frozenset[str] | None:
    """The topics of a ConsumerProtocolSubscription (any version), or None if it does not parse.

    Every version starts with int16 version, then Topics as an int32-counted array of int16-length
    strings; later fields (user data, owned partitions, generation, rack) are not needed here.
    """
    try:
        (count,) = struct.unpack_from(">i", subscription, 2)
        pos, topics = 6, set()
        for _ in range(count):
            (n,) = struct.unpack_from(">h", subscription, pos)
            topics.add(subscription[pos + 2 : pos + 2 + n].decode())
            if n < 0 or pos + 2 + n > len(subscription):
                return None
            pos += 2 + n
        return frozenset(topics)
    except (struct.error, UnicodeDecodeError):
        return None
