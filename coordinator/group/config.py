"""Group coordinator settings, under Kafka's broker config keys and with Kafka's defaults."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ("GroupConfig",)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupConfig:
    # group.min.session.timeout.ms / group.max.session.timeout.ms
    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    # group.initial.rebalance.delay.ms: how long a rebalance of an Empty group waits for more joins.
    initial_rebalance_delay_ms: int = 3_000
    # group.max.size
    max_size: int = 2**31 - 1
    # Kafka's GroupCoordinator.NewMemberJoinTimeoutMs (KIP-394): a new member parked in a join
    # that never completes is dropped after this long.
    new_member_join_timeout_ms: int = 300_000
    # offsets.retention.minutes, in ms
    offsets_retention_ms: int = 10_080 * 60_000
    # offsets.retention.check.interval.ms
    offsets_retention_check_interval_ms: int = 600_000
    # offset.metadata.max.bytes
    offset_metadata_max_bytes: int = 4_096
    # offsets.topic.num.partitions
    offsets_topic_num_partitions: int = 50
    # offsets.topic.segment.bytes: small segments roll, so the cleaner can compact them
    offsets_topic_segment_bytes: int = 104_857_600
