"""The feature flags this broker advertises in ApiVersions (KIP-584), one row per feature.

A row is a promise: list a feature only when the broker implements every level up to its
finalized one. A single node has nothing to negotiate, so each feature is finalized at its highest
supported level and never changes (UpdateFeatures is not served).

- metadata.version 7..25 (3.3-IV3 .. 4.0-IV3): Kafka 4.x brokers refuse anything below 3.3-IV3;
  4.0-IV3 is the level a Kafka 4.0 KRaft cluster is formatted with, and the client API versions
  this broker serves are those of Kafka 4.0.
- group.version 0..1: level 1 is the KIP-848 consumer group protocol (ConsumerGroupHeartbeat),
  served beside the classic one.
- Not listed: transaction.version
  (issue 14 adds it when the KIP-890 part 2 handshake is in), kraft.version and
  eligible.leader.replicas.version (there is no quorum and no replication).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ("FEATURES", "FINALIZED_FEATURES_EPOCH", "Feature")


@dataclass(frozen=True, slots=True, kw_only=True)
class Feature:
    name: str
    min_version: int
    max_version: int
    # The cluster-wide level in force (Kafka's FinalizedVersionLevel).
    finalized_level: int


FEATURES: Final[tuple[Feature, ...]] = (
    Feature(name="metadata.version", min_version=7, max_version=25, finalized_level=25),
    Feature(name="group.version", min_version=0, max_version=1, finalized_level=1),
)
# Kafka uses the offset of the metadata record that last changed a feature; ours never change.
FINALIZED_FEATURES_EPOCH: Final = 0
