"""Checks every backend makes before it creates a topic or moves a log start offset, so that each
answers the same Kafka error for the same bad request."""

from __future__ import annotations

from collections.abc import Mapping

from protocol.errors import ErrorCode, KafkaError

from .api import TopicPartition, validate_topic_name
from .log_config import LogConfig, check_topic_configs

__all__ = ("check_new_topic", "delete_records_target")


def check_new_topic(name: str, partitions: int, configs: Mapping[str, str] | None,
                    log_defaults: Mapping[str, object]) -> dict[str, str]:
    """CreateTopics' checks of name, partition count and configs; the topic's own configs."""
    validate_topic_name(name)
    if partitions <= 0:
        raise KafkaError(ErrorCode.invalid_partitions, f"number of partitions must be larger than 0, got {partitions}")
    out = dict(configs or {})
    check_topic_configs(log_defaults, out)
    return out


def delete_records_target(tp: TopicPartition, config: LogConfig, offset: int, high_watermark: int) -> int:
    """DeleteRecords: the new log start offset for offset (-1: the high watermark), or the error."""
    if "delete" not in config.cleanup_policy.split(","):
        raise KafkaError(ErrorCode.policy_violation, f"records of {tp} cannot be deleted: "
                         f"cleanup.policy is {config.cleanup_policy}")
    target = high_watermark if offset == -1 else offset
    if not 0 <= target <= high_watermark:
        raise KafkaError(ErrorCode.offset_out_of_range, f"cannot move the log start offset of {tp} to "
                         f"{offset}: it is outside [0, {high_watermark}]")
    return target
