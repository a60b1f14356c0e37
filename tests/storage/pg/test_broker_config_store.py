"""Dynamic broker configs shared through PostgreSQL (storage/pg/broker_config_store.py): a set
written through one broker reaches another at its next poll (here: its next refresh), per entity,
and is there for a broker that starts later."""

from __future__ import annotations

import asyncpg

from storage.pg.broker_config_store import PgBrokerConfigStore


async def test_a_change_through_one_broker_reaches_another(db: asyncpg.Pool) -> None:
    one, two = PgBrokerConfigStore(db), PgBrokerConfigStore(db)
    assert await one.refresh() and await two.refresh()
    changed: list[dict[str, str]] = []
    two.add_listener(lambda: changed.append(dict(two.configs(""))))
    await one.replace("", {"log.retention.ms": "5000", "num.io.threads": "4"})
    await one.replace("2", {"message.max.bytes": "100"})
    assert one.configs("") == {"log.retention.ms": "5000", "num.io.threads": "4"}  # the writer at once
    assert two.configs("") == {}
    assert await two.refresh() and changed == [{"log.retention.ms": "5000", "num.io.threads": "4"}]
    assert not await two.refresh()
    await two.replace("", {"log.retention.ms": "6000"})
    later = PgBrokerConfigStore(db)
    await later.refresh()
    assert (later.configs(""), later.configs("2"), later.configs("1")) == (
        {"log.retention.ms": "6000"}, {"message.max.bytes": "100"}, {})
    assert later.entities() == ["", "2"]  # ListConfigResources lists the groups among them
    await later.replace("2", {})
    assert later.entities() == [""]
