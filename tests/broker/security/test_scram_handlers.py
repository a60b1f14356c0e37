"""AlterUserScramCredentials and DescribeUserScramCredentials in process, with Kafka's checks, and
the credentials durable (and never a password) in the data dir."""

from __future__ import annotations

import json
import os
import stat

import pytest

from broker.security.scram import MECHANISMS, credential_from_salted_password, salted_password
from broker.state import BrokerState
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from storage.api import ScramCredentialStore
from tests.broker.test_admin_handlers import call

E = ErrorCode
SHA256, SHA512 = 1, 2


@pytest.fixture
async def state(broker_state):  # type: ignore[no-untyped-def]
    state = await broker_state()
    state.scram_credentials = ScramCredentialStore(state.config.data_dir)
    return state


# Long enough never to appear by chance in the base64 of the stored salt and keys ("pw" did, now and then).
PASSWORD = "never-stored-password"


def upsert(name: str, mechanism: int = SHA256, password: str = PASSWORD, iterations: int = 8192) -> dict[str, object]:
    mech = MECHANISMS["SCRAM-SHA-256" if mechanism == SHA256 else "SCRAM-SHA-512"]
    salt = os.urandom(16)
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": salt,
            "salted_password": salted_password(mech, password, salt, iterations)}


async def alter(state: BrokerState, upsertions: list[dict[str, object]],
                deletions: list[dict[str, object]] | None = None) -> dict[str, tuple[ErrorCode, str | None]]:
    response = await call(state, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, deletions=deletions or [],
                          upsertions=upsertions)
    return {r.user: (r.error_code, r.error_message) for r in response.results}


async def test_upsert_describe_delete_and_durability(state: BrokerState) -> None:
    assert await alter(state, [upsert("alice"), upsert("bob", SHA512, iterations=4096)]) == {
        "alice": (E.none, None), "bob": (E.none, None)}
    described = await call(state, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=None)
    assert [(r.user, [(c.mechanism, c.iterations) for c in r.credential_infos]) for r in described.results] == [
        ("alice", [(SHA256, 8192)]), ("bob", [(SHA512, 4096)])]
    reloaded = ScramCredentialStore(state.config.data_dir)
    reloaded.load()
    stored = reloaded.get("alice", "SCRAM-SHA-256")
    assert stored is not None and stored.iterations == 8192
    path = state.config.data_dir / "scram-credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert PASSWORD not in json.dumps(json.loads(path.read_text())["users"]["alice"])  # keys, not the password
    assert await alter(state, [], [{"name": "alice", "mechanism": SHA256}]) == {"alice": (E.none, None)}
    named = await call(state, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=[{"name": "alice"}])
    assert [(r.user, r.error_code) for r in named.results] == [("alice", E.resource_not_found)]


async def test_the_stored_keys_verify_the_password(state: BrokerState) -> None:
    change = upsert("carol", password="right")
    await alter(state, [change])
    mech = MECHANISMS["SCRAM-SHA-256"]
    stored = state.scram_credentials.get("carol", "SCRAM-SHA-256")  # type: ignore[union-attr]
    expected = credential_from_salted_password(mech, salted_password(mech, "right", stored.salt, 8192),  # type: ignore[union-attr]
                                               stored.salt, 8192)  # type: ignore[union-attr]
    assert stored == expected


async def test_kafka_checks_each_change(state: BrokerState) -> None:
    results = await alter(state, [upsert(""), upsert("few", iterations=1000), upsert("many", iterations=20000),
                                  upsert("twice"), upsert("twice"), {**upsert("odd"), "mechanism": 3}],
                          [{"name": "ghost", "mechanism": SHA256}])
    assert results == {
        "": (E.unacceptable_credential, "Username must not be empty"),
        "few": (E.unacceptable_credential, "Too few iterations"),
        "many": (E.unacceptable_credential, "Too many iterations"),
        "twice": (E.duplicate_resource, "A user credential cannot be altered twice in the same request"),
        "odd": (E.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
        "ghost": (E.resource_not_found, "Attempt to delete a user credential that does not exist"),
    }
    assert state.scram_credentials.users() == {}  # type: ignore[union-attr]


async def test_describe_names_users_without_credentials_and_duplicates(state: BrokerState) -> None:
    everyone = await call(state, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=[])
    assert everyone.error_code == E.none and everyone.results == ()
    named = await call(state, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0,
                       users=[{"name": "alice"}, {"name": "bob"}, {"name": "bob"}])
    assert [(r.user, r.error_code) for r in named.results] == [("alice", E.resource_not_found),
                                                                ("bob", E.duplicate_resource)]
