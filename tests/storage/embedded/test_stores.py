"""The small stores a local set shares in cluster.db (storage/embedded/stores.py), each written
through one process's connections and read through another's, as two processes of a set do."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from storage.embedded.db import SharedDb
from storage.embedded.stores import (
    EmbeddedBrokerConfigStore,
    EmbeddedFeatureLevels,
    EmbeddedProducerIdBlocks,
    EmbeddedSecurity,
)
from storage.pg.security_store import SharedAclStore as EmbeddedAclStore
from storage.pg.security_store import SharedScramCredentialStore as EmbeddedScramCredentialStore
from storage.scram_credentials import ScramCredential

ACL = {"resource_type": 2, "name": "orders", "pattern_type": 3, "principal": "User:alice", "host": "*",
       "operation": 3, "permission_type": 3}


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[SharedDb, SharedDb]]:
    a, b = SharedDb(tmp_path), SharedDb(tmp_path)
    a.open()
    b.open()
    yield a, b
    a.close()
    b.close()


async def test_acls_and_credentials_written_by_one_are_read_by_the_other(two) -> None:
    a, b = EmbeddedSecurity(two[0]), EmbeddedSecurity(two[1])
    await b.refresh()
    heard: list[int] = []
    b.add_listener(lambda: heard.append(len(b.acl_records)))
    assert await EmbeddedAclStore(a).update([ACL], [ACL], []) == [ACL]
    credential = ScramCredential(salt=b"s", stored_key=b"k", server_key=b"v", iterations=4096)
    await EmbeddedScramCredentialStore(a).alter([("alice", "SCRAM-SHA-256", credential)], [])
    assert await b.refresh() and heard == [1]
    assert EmbeddedAclStore(b).load() == [ACL]
    assert EmbeddedScramCredentialStore(b).get("alice", "SCRAM-SHA-256") == credential
    assert not await b.refresh()  # nothing moved: one row read, nobody told
    await EmbeddedAclStore(b).update([], [], [ACL])
    await EmbeddedScramCredentialStore(b).alter([], [("alice", "SCRAM-SHA-256")])
    await a.refresh()
    assert a.acl_records == [] and a.credentials == {}


async def test_dynamic_broker_configs_are_shared(two) -> None:
    a, b = EmbeddedBrokerConfigStore(two[0]), EmbeddedBrokerConfigStore(two[1])
    await a.replace_many({"": {"log.retention.ms": "1000"}, "2": {"log.cleaner.threads": "2"}})
    await b.refresh()
    assert b.configs("") == {"log.retention.ms": "1000"} and b.entities() == ["", "2"]
    await b.replace("2", {})
    await a.refresh()
    assert a.entities() == [""]


async def test_feature_levels_seeded_once_and_changed_by_compare_and_set(two) -> None:
    a, b = EmbeddedFeatureLevels(two[0]), EmbeddedFeatureLevels(two[1])
    assert a.seed({"transaction.version": 2}).levels == {"transaction.version": 2}
    assert b.seed({"transaction.version": 1}).levels == {"transaction.version": 2}  # the first start's
    changed = await a.compare_and_set("transaction.version", 1, 2)
    assert changed is not None and changed.levels == {"transaction.version": 1} and changed.epoch == 1
    assert await b.compare_and_set("transaction.version", 0, 2) is None  # checked against a stale level
    assert (await b.load()).levels == {"transaction.version": 1}


async def test_producer_id_blocks_never_overlap(two) -> None:
    a, b = EmbeddedProducerIdBlocks(two[0]), EmbeddedProducerIdBlocks(two[1])
    firsts = [await a.allocate_producer_ids(1000), await b.allocate_producer_ids(1000),
              await a.allocate_producer_ids(1000)]
    assert firsts == [0, 1000, 2000]
    await b.honour(10_000)
    await a.honour(5)  # never moves it back
    assert await a.allocate_producer_ids(10) == 10_000
    with pytest.raises(ValueError):
        await a.allocate_producer_ids(0)


async def test_a_change_through_one_is_read_by_the_others_watch(two) -> None:
    """SharedDb.watch_forever reads the version rows and re-reads what moved: ACLs written
    through one process reach the other's listeners with no call of refresh."""
    a, b = EmbeddedSecurity(two[0]), EmbeddedSecurity(two[1])
    heard = asyncio.Event()
    b.add_listener(lambda: b.acl_records and heard.set())
    b.watch()
    watching = asyncio.get_running_loop().create_task(two[1].watch_forever())
    try:
        await EmbeddedAclStore(a).update([ACL], [ACL], [])
        await asyncio.wait_for(heard.wait(), 30)
        assert b.acl_records == [ACL]
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
