"""The finalized feature levels of a cluster, shared by every broker (table finalized_features).

On a single node they live in `<log.dirs>/finalized-features.properties` (storage/feature_levels.py);
in cluster mode each broker's data dir is its own, so the levels an operator sets with
UpdateFeatures (`kafka-features upgrade|downgrade` against any broker) are rows here, as Kafka
keeps them in the metadata log every broker replays. Each row carries the finalized-features
epoch of the change that set it; the cluster's epoch is the largest, so it grows with every
change, as Kafka's (the offset of the last FeatureLevelRecord) does.

The first broker to start seeds the rows from its configured start levels (Kafka's format step);
later brokers find them. A change is a compare-and-set on the level it was checked against, under
a table lock, so two brokers changing a level at once cannot both win or reuse an epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ..feature_levels import StoredFeatureLevels
from .pool import Pool, Row

__all__ = ("PgFeatureLevelStore",)


_SEED: Final = """
    INSERT INTO finalized_features (name, level, epoch)
    SELECT name, level, 0 FROM unnest($1::text[], $2::smallint[]) AS start (name, level)
    ON CONFLICT (name) DO NOTHING
"""

_READ: Final = "SELECT name, level, epoch FROM finalized_features"

_SET: Final = """
    UPDATE finalized_features
    SET level = $2, epoch = (SELECT max(epoch) + 1 FROM finalized_features)
    WHERE name = $1 AND level = $3
"""


class PgFeatureLevelStore:
    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def seed(self, start_levels: Mapping[str, int]) -> StoredFeatureLevels:
        """Write the start levels where the cluster has none yet; the cluster's levels."""
        names = sorted(start_levels)
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(_SEED, names, [start_levels[n] for n in names])
            return _stored(await conn.fetch(_READ))

    async def load(self) -> StoredFeatureLevels:
        async with self.pool.acquire() as conn:
            return _stored(await conn.fetch(_READ))

    async def compare_and_set(self, name: str, level: int, expected: int) -> StoredFeatureLevels | None:
        """Set name's level if it is still expected; the levels after, or None if another broker
        changed it first (the caller re-reads and checks again)."""
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute("LOCK TABLE finalized_features IN SHARE ROW EXCLUSIVE MODE")
            if await conn.execute(_SET, name, level, expected) != "UPDATE 1":
                return None
            return _stored(await conn.fetch(_READ))


def _stored(rows: list[Row]) -> StoredFeatureLevels:
    return StoredFeatureLevels(epoch=max((int(r["epoch"]) for r in rows), default=0),
                               levels={str(r["name"]): int(r["level"]) for r in rows})
