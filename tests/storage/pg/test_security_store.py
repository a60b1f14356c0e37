"""SCRAM credentials and ACLs shared through PostgreSQL (storage/pg/security_store.py): what one
broker changes, another finds at its next poll (here: its next refresh), changes made at once
through two brokers are both kept, and everything is still there for a broker that starts later."""

from __future__ import annotations

from typing import Any

import asyncpg

from storage.pg.security_store import PgSecurityMetadata, SharedAclStore, SharedScramCredentialStore
from storage.scram_credentials import ScramCredential

CRED = ScramCredential(salt=b"salt", stored_key=b"stored", server_key=b"server", iterations=4096)


def acl(name: str, principal: str = "User:alice") -> dict[str, Any]:
    return {"resource_type": "TOPIC", "resource_name": name, "pattern_type": "LITERAL", "principal": principal,
            "host": "*", "operation": "READ", "permission_type": "ALLOW"}


async def broker(db: asyncpg.Pool) -> PgSecurityMetadata:
    metadata = PgSecurityMetadata(db)
    assert await metadata.refresh()  # the first read always loads
    return metadata


async def test_credentials_altered_through_one_broker_reach_another(db: asyncpg.Pool) -> None:
    one, two = await broker(db), await broker(db)
    changed: list[int] = []
    two.add_listener(lambda: changed.append(len(two.credentials)))
    await SharedScramCredentialStore(one).alter([("alice", "SCRAM-SHA-256", CRED), ("bob", "SCRAM-SHA-512", CRED)], [])
    assert SharedScramCredentialStore(one).get("alice", "SCRAM-SHA-256") == CRED  # the writer sees it at once
    assert SharedScramCredentialStore(two).get("alice", "SCRAM-SHA-256") is None  # the other at its next poll
    assert await two.refresh() and changed == [2]
    assert not await two.refresh()  # nothing new: one row read, no reload
    assert SharedScramCredentialStore(two).users() == {"alice": {"SCRAM-SHA-256": CRED}, "bob": {"SCRAM-SHA-512": CRED}}
    await SharedScramCredentialStore(two).alter([], [("alice", "SCRAM-SHA-256")])
    assert await one.refresh()
    assert SharedScramCredentialStore(one).users() == {"bob": {"SCRAM-SHA-512": CRED}}
    assert "password" not in str(await db.fetch("SELECT * FROM scram_credentials"))


async def test_acl_changes_made_at_once_through_two_brokers_are_both_kept(db: asyncpg.Pool) -> None:
    one, two = await broker(db), await broker(db)
    stored_one = await SharedAclStore(one).update([acl("a")], [acl("a")], [])
    stored_two = await SharedAclStore(two).update([acl("b")], [acl("b")], [])  # two had not seen "a" yet
    assert stored_one == [acl("a")]
    assert sorted(r["resource_name"] for r in stored_two or []) == ["a", "b"]
    assert await one.refresh()
    assert SharedAclStore(one).load() == SharedAclStore(two).load()
    await SharedAclStore(one).update([acl("b")], [], [acl("a")])
    later = await broker(db)  # a broker started afterwards
    assert SharedAclStore(later).load() == [acl("b")]
    await SharedAclStore(one).update([acl("b")], [acl("b")], [])  # adding what exists changes nothing
    assert await db.fetchval("SELECT count(*) FROM acls") == 1
