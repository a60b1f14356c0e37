"""GroupMetadata to and from its __consumer_offsets record, and its DescribeGroups summary.

Loading follows Kafka's GroupMetadata.loadGroup: a group with members comes back Stable with its
last assignment (members must heartbeat within their session timeout or are removed), a group
without members comes back Empty with its generation, so committed offsets keep their owner.
"""

from __future__ import annotations

from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from .config import GroupConfig
from .log import GroupMetadataValue, MemberMetadataValue
from .member import MemberMetadata, identity
from .metadata import GroupMetadata
from .state import GroupState

__all__ = ("GroupSummary", "MemberSummary", "describe", "load_group", "replay_group", "to_value")


def to_value(group: GroupMetadata) -> GroupMetadataValue:
    protocol = group.protocol_name
    return GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=protocol,
        leader=group.leader_id,
        current_state_timestamp=(
            -1 if group.current_state_timestamp is None else group.current_state_timestamp
        ),
        members=tuple(
            MemberMetadataValue(
                **identity(m),
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata(protocol) if protocol is not None else b"",
                assignment=m.assignment,
            )
            for m in group.members.values()
        ),
    )


def load_group(
    group_id: str, value: GroupMetadataValue, config: GroupConfig | None, now_ms: int
) -> GroupMetadata:
    """Rebuild a group from its last record; offsets are loaded separately into group.offsets."""
    group = GroupMetadata(group_id, config, now_ms=now_ms)
    replay_group(group, value, now_ms)
    return group


def replay_group(group: GroupMetadata, value: GroupMetadataValue, now_ms: int) -> None:
    """Replay a group metadata record into the group, in place (its offsets stay): what the
    loader does at start-up and the coordinator after writing a classic decision's record."""
    group.consumer = None  # a classic record: the group speaks the classic protocol from here
    group.generation_id = value.generation
    group.protocol_type = value.protocol_type or None
    group.protocol_name = value.protocol
    group.leader_id = value.leader
    group.current_state_timestamp = (
        None if value.current_state_timestamp < 0 else value.current_state_timestamp
    )
    group.members, group.static_members = {}, {}
    for m in value.members:
        group.members[m.member_id] = MemberMetadata(
            **identity(m),
            rebalance_timeout_ms=m.rebalance_timeout,
            session_timeout_ms=m.session_timeout,
            protocol_type=value.protocol_type,
            supported_protocols=((value.protocol or "", m.subscription),),
            assignment=m.assignment,
            heartbeat_deadline_ms=now_ms + m.session_timeout,
        )
        if m.group_instance_id is not None:
            group.static_members[m.group_instance_id] = m.member_id
    # With members: Empty -> PreparingRebalance -> CompletingRebalance -> Stable, without the
    # waiting: the log only holds groups whose assignment was persisted.
    group.state = GroupState.STABLE if group.members else GroupState.EMPTY
    group.subscribed_topics = group.compute_subscribed_topics() if group.members else None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupSummary:
    group_id: str
    state: GroupState
    protocol_type: str
    protocol: str
    members: tuple[MemberSummary, ...]
    # DescribeGroups answers GROUP_ID_NOT_FOUND for a consumer-protocol group, as Kafka does.
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None


def describe(group: GroupMetadata) -> GroupSummary:
    """DescribeGroups' view: subscriptions and assignments only once the group is Stable."""
    stable = group.state is GroupState.STABLE and group.protocol_name is not None
    return GroupSummary(
        group_id=group.group_id,
        state=group.state,
        protocol_type=group.protocol_type or "",
        protocol=(group.protocol_name or "") if stable else "",
        members=tuple(
            MemberSummary(
                **identity(m),
                metadata=m.metadata(group.protocol_name) if stable and group.protocol_name else b"",
                assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        ),
    )
