"""The cluster's finalized feature levels in PostgreSQL (storage/pg/feature_levels.py): seeded once
by the first broker, changed by compare-and-set, with an epoch that grows with every change."""

from __future__ import annotations

import asyncio

import asyncpg

from storage.pg.feature_levels import PgFeatureLevelStore

TV = "transaction.version"


async def test_the_first_broker_seeds_the_levels_and_later_ones_find_them(db: asyncpg.Pool) -> None:
    first, second = PgFeatureLevelStore(db), PgFeatureLevelStore(db)
    seeded = await first.seed({TV: 2})
    assert (seeded.epoch, dict(seeded.levels)) == (0, {TV: 2})
    found = await second.seed({TV: 1})  # configured otherwise: the cluster's level stands
    assert (found.epoch, dict(found.levels)) == (0, {TV: 2})


async def test_a_change_is_a_compare_and_set_that_raises_the_epoch(db: asyncpg.Pool) -> None:
    store = PgFeatureLevelStore(db)
    await store.seed({TV: 2})
    changed = await store.compare_and_set(TV, 1, expected=2)
    assert changed is not None and (changed.epoch, dict(changed.levels)) == (1, {TV: 1})
    assert await store.compare_and_set(TV, 0, expected=2) is None  # checked against a stale level
    assert (await store.load()).epoch == 1
    # two brokers changing it at once from the same level: one wins, one epoch
    results = await asyncio.gather(store.compare_and_set(TV, 2, expected=1), store.compare_and_set(TV, 0, expected=1))
    assert sorted(r is None for r in results) == [False, True]
    final = await store.load()
    assert final.epoch == 2 and final.levels[TV] in (0, 2)
