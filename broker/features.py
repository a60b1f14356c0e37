"""The feature flags this broker advertises in ApiVersions (KIP-584), one row per feature, and the
levels finalized now.

A row is a promise: list a feature only when the broker implements every level up to its
maximum. A single node has nothing to negotiate: each feature starts finalized at its start level
(transaction.version from the property of that name), and UpdateFeatures changes the levels of
the features Kafka lets an operator change, as `kafka-features upgrade/downgrade` does.

- metadata.version 7..25 (3.3-IV3 .. 4.0-IV3): Kafka 4.x brokers refuse anything below 3.3-IV3;
  4.0-IV3 is the level a Kafka 4.0 KRaft cluster is formatted with, and the client API versions
  this broker serves are those of Kafka 4.0. It is fixed: eosbroker has no other metadata format.
- group.version 0..1: level 1 is the KIP-848 consumer group protocol (ConsumerGroupHeartbeat),
  served beside the classic one.
- transaction.version 0..2 (KIP-890): 2 lets clients use Transactions V2 (Produce v12+, EndTxn
  v5, TxnOffsetCommit v5); 1 and 0 keep them on V1. Requests are served by their version whatever
  the level (as Kafka does), so the level only tells clients which protocol to pick.
- share.version 0..2 (KIP-932, KIP-1191): 1 serves share groups (ShareGroupHeartbeat, ShareFetch,
  ...), 0 refuses them with UNSUPPORTED_VERSION; Kafka 4.4 formats a new cluster at 2, which adds
  the dead-letter topic (errors.deadletterqueue.topic.name, coordinator/share/dead_letters.py).
- Not listed: kraft.version and
  eligible.leader.replicas.version (there is no quorum and no replication).

In cluster mode the levels are the cluster's, kept in PostgreSQL (storage/pg/feature_levels.py):
an update is a compare-and-set there, checked against the cluster's current level, and every
broker re-reads them each cluster.lease.ms / 4 (FeatureLevelWatcher), so all of them advertise
and use a change within a lease period, with the same finalized-features epoch.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from protocol.errors import ErrorCode, KafkaError
from storage.api import StoredFeatureLevels

__all__ = ("FEATURES", "Feature", "FeatureLevelStore", "FeatureLevelWatcher", "FinalizedFeatures",
           "SharedFeatureLevels", "StoredLevels", "UpgradeType")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Feature:
    name: str
    min_version: int
    max_version: int
    # The level finalized when nothing else says otherwise (Kafka's level at format time).
    finalized_level: int
    # Whether UpdateFeatures may change it; the others are fixed by the implementation.
    updatable: bool = False


FEATURES: Final[tuple[Feature, ...]] = (
    Feature(name="metadata.version", min_version=7, max_version=25, finalized_level=25),
    Feature(name="group.version", min_version=0, max_version=1, finalized_level=1),
    Feature(name="transaction.version", min_version=0, max_version=2, finalized_level=2, updatable=True),
    Feature(name="share.version", min_version=0, max_version=2, finalized_level=2, updatable=True),
)


class UpgradeType:
    """UpdateFeatures' upgrade_type (v1+); v0's allow_downgrade maps to SAFE_DOWNGRADE."""

    UPGRADE: Final = 1
    SAFE_DOWNGRADE: Final = 2
    UNSAFE_DOWNGRADE: Final = 3


# The levels as stored: one type for the file (storage/feature_levels.py) and the cluster's rows,
# which each store returns; a copy of it here did not match the stores' Protocols.
StoredLevels = StoredFeatureLevels


class FeatureLevelStore(Protocol):
    """Where changed levels survive a restart (storage/feature_levels.py keeps them in the data dir)."""

    def load(self) -> StoredLevels | None: ...

    def save(self, stored: StoredLevels) -> None: ...


class SharedFeatureLevels(Protocol):
    """The cluster's levels, shared by every broker (storage/pg/feature_levels.py)."""

    async def load(self) -> StoredLevels: ...

    async def compare_and_set(self, name: str, level: int, expected: int) -> StoredLevels | None: ...


class FinalizedFeatures:
    """The levels in force and their epoch. Kafka's epoch is the offset of the metadata record
    that last changed a feature; here it counts changes, so it grows with every one, which is
    what clients look at (Java's producer re-reads transaction.version only when it grows)."""

    def __init__(self, start_levels: Mapping[str, int] | None = None, store: FeatureLevelStore | None = None,
                 shared: SharedFeatureLevels | None = None, shared_levels: StoredLevels | None = None) -> None:
        """store: the data dir's file (a single node); shared: the cluster's levels, as read at
        start-up (shared_levels), which replace the file's."""
        self.store = store
        self.shared = shared
        self.levels = {f.name: f.finalized_level for f in FEATURES} | dict(start_levels or {})
        self.epoch = 0
        stored = shared_levels if shared is not None else store.load() if store is not None else None
        if stored is not None:
            self.apply(stored)

    def level(self, name: str) -> int:
        return self.levels.get(name, 0)

    def apply(self, stored: StoredLevels) -> None:
        """Take stored levels as the finalized ones (at start-up, or the cluster's as re-read)."""
        self.epoch = stored.epoch
        for name, level in stored.levels.items():
            if _feature(name) is not None:
                self.levels[name] = level

    async def refresh(self) -> None:
        """Cluster mode: re-read the cluster's levels, logging a change another broker made."""
        if self.shared is None:
            return
        stored = await self.shared.load()
        if stored.epoch == self.epoch:
            return
        before = dict(self.levels)
        self.apply(stored)
        for name, level in self.levels.items():
            if before.get(name) != level:
                log.info("feature %s finalized at level %d by another broker (was %s); finalized features epoch %d",
                         name, level, before.get(name), self.epoch)

    async def update(self, name: str, level: int, upgrade_type: int, validate_only: bool = False) -> None:
        """Check one update as Kafka's controller does; apply and persist it unless validate_only."""
        while True:
            await self.refresh()  # cluster mode: check against the cluster's level, not a stale copy
            current = self.level(name)
            _check_update(name, level, current, upgrade_type)
            if validate_only or level == current:
                return
            if self.shared is None:
                self._save_locally(name, level)
                break
            stored = await self.shared.compare_and_set(name, level, current)
            if stored is not None:
                self.apply(stored)
                break
            # another broker changed it since it was read: check again against its level, as
            # Kafka's controller checks each update against the level it has when it applies it
        log.info("feature %s finalized at level %d (was %d); finalized features epoch %d", name, level,
                 current, self.epoch)

    def _save_locally(self, name: str, level: int) -> None:
        levels = dict(self.levels) | {name: level}
        if self.store is not None:
            self.store.save(StoredLevels(epoch=self.epoch + 1, levels={
                f.name: levels[f.name] for f in FEATURES if f.updatable}))
        self.levels, self.epoch = levels, self.epoch + 1


class FeatureLevelWatcher:
    """Cluster mode: re-reads the cluster's levels every interval, so a change made through
    another broker is advertised and used here within a lease period."""

    def __init__(self, features: FinalizedFeatures, interval_s: float) -> None:
        self.features = features
        self.interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="feature-levels")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            # A read cancelled on a database that does not answer ends only when the backend cuts
            # the pool off (asyncpg waits for its cancel request): not waited for past half a second.
            await asyncio.wait({self._task}, timeout=0.5)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self.features.refresh()
            except Exception as exc:  # the database is down: keep the levels we have, try again
                log.warning("cannot re-read the cluster's feature levels: %r", exc)


def _feature(name: str) -> Feature | None:
    return next((f for f in FEATURES if f.name == name), None)


def _invalid(name: str, level: int, why: str) -> KafkaError:
    return KafkaError(ErrorCode.invalid_update_version, f"Invalid update version {level} for feature {name}. {why}")


def _check_update(name: str, level: int, current: int, upgrade_type: int) -> None:
    feature = _feature(name)
    if feature is None:
        raise _invalid(name, level, "eosbroker does not implement this feature.")
    if upgrade_type not in (UpgradeType.UPGRADE, UpgradeType.SAFE_DOWNGRADE, UpgradeType.UNSAFE_DOWNGRADE):
        raise _invalid(name, level, "The controller does not support the given upgrade type.")
    if level < 0:
        raise _invalid(name, level, "A feature version cannot be less than 0.")
    if not feature.updatable:
        if level != current:
            raise _invalid(name, level, f"eosbroker implements level {current} only: this feature is fixed.")
        return
    if not feature.min_version <= level <= feature.max_version:
        raise _invalid(name, level, f"Local broker supports versions {feature.min_version}-{feature.max_version}.")
    if level < current and upgrade_type == UpgradeType.UPGRADE:
        raise _invalid(name, level, "Can't downgrade the version of this feature without setting the upgrade type "
                                    "to either safe or unsafe downgrade.")
    if level > current and upgrade_type != UpgradeType.UPGRADE:
        raise _invalid(name, level, "Can't downgrade to a newer version.")
