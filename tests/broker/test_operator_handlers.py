"""The answers behind Kafka's operator tools, in process: the features ApiVersions advertises
(broker/features.py) and what a single node answers to leader
elections and partition reassignments."""

from __future__ import annotations

import pytest

from broker.features import FEATURES
from broker.quotas.manager import ClientQuotas
from broker.state import BrokerState
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.broker_config_store import FileBrokerConfigStore
from tests.broker.test_admin_handlers import call

E = ErrorCode


@pytest.fixture
async def state(broker_state):  # type: ignore[no-untyped-def]
    return await broker_state(a=2)


def test_features_table_lists_only_implemented_features() -> None:
    # A feature listed is a promise: group.version 1 makes clients use KIP-848's consumer protocol,
    # transaction.version 2 Transactions V2, share.version 1+ share groups (finalized at 2, as Kafka 4.4
    # formats a cluster).
    assert [(f.name, f.min_version, f.max_version, f.finalized_level) for f in FEATURES] == [
        ("metadata.version", 7, 25, 25), ("group.version", 0, 1, 1), ("transaction.version", 0, 2, 2),
        ("share.version", 0, 2, 2)]


@pytest.mark.parametrize("version", [3, 4])
async def test_api_versions_v3_plus_advertises_features(state: BrokerState, version: int) -> None:
    response = await call(state, ApiKey.API_VERSIONS, version, client_software_name="t",
                          client_software_version="1")
    # v3 leaves out supported features whose minimum is 0 (KAFKA-17011).
    assert [(f.name, f.min_version, f.max_version) for f in response.supported_features] == [
        ("metadata.version", 7, 25)] + (
        [("group.version", 0, 1), ("transaction.version", 0, 2), ("share.version", 0, 2)] if version >= 4 else [])
    assert [(f.name, f.min_version_level, f.max_version_level) for f in response.finalized_features] == [
        ("metadata.version", 25, 25), ("group.version", 1, 1), ("transaction.version", 2, 2), ("share.version", 2, 2)]
    assert response.finalized_features_epoch == 0


async def test_elect_leaders_answers_election_not_needed_with_why(state: BrokerState) -> None:
    response = await call(state, ApiKey.ELECT_LEADERS, 2, election_type=0,
                          topic_partitions=[{"topic": "a", "partitions": [1, 5]}], timeout=1000)
    [topic] = response.replica_election_results
    assert [(p.partition_id, p.error_code) for p in topic.partition_result] == [
        (1, E.election_not_needed), (5, E.unknown_topic_or_partition)]
    assert "only replica, broker 1, already leads" in topic.partition_result[0].error_message
    everything = await call(state, ApiKey.ELECT_LEADERS, 2, election_type=1, topic_partitions=None, timeout=1000)
    assert everything.replica_election_results == ()
    with pytest.raises(KafkaError) as bad:
        await call(state, ApiKey.ELECT_LEADERS, 1, election_type=2, topic_partitions=None, timeout=1000)
    assert bad.value.code == E.invalid_request


async def test_alter_partition_reassignments_refuses_other_brokers(state: BrokerState) -> None:
    parts = [{"partition_index": 0, "replicas": [1]}, {"partition_index": 1, "replicas": [2]},
             {"partition_index": 0, "replicas": None}, {"partition_index": 1, "replicas": []},
             {"partition_index": 0, "replicas": [1, 1]}, {"partition_index": 9, "replicas": [1]}]
    response = await call(state, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, timeout=1000,
                          topics=[{"name": "a", "partitions": parts}])
    results = response.responses[0].partitions
    assert [r.error_code for r in results] == [
        E.none, E.invalid_replica_assignment, E.no_reassignment_in_progress, E.invalid_replica_assignment,
        E.invalid_replica_assignment, E.unknown_topic_or_partition]
    assert results[1].error_message == "The manual partition assignment includes broker 2, but no such broker " \
        "is registered."
    listed = await call(state, ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, timeout=1000, topics=None)
    assert listed.error_code == E.none and listed.topics == ()


async def test_client_quotas_alter_and_describe(state: BrokerState, tmp_path) -> None:  # type: ignore[no-untyped-def]
    state.quotas = ClientQuotas(FileBrokerConfigStore(tmp_path))
    any_user = [{"entity_type": "user", "match_type": 2, "match": None}]
    described = await call(state, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, strict=False, components=any_user)
    assert described.error_code == E.none and described.entries == ()
    with pytest.raises(KafkaError) as bad:
        await call(state, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, strict=False,
                   components=[{"entity_type": "user", "match_type": 7, "match": None}])
    assert bad.value.code == E.invalid_request

    def entry(pairs, *ops):  # type: ignore[no-untyped-def]
        return {"entity": [{"entity_type": t, "entity_name": n} for t, n in pairs],
                "ops": [{"key": k, "value": v, "remove": v is None} for k, v in ops]}

    altered = await call(state, ApiKey.ALTER_CLIENT_QUOTAS, 1, validate_only=False, entries=[
        entry([("user", "alice")], ("producer_byte_rate", 1024.0), ("consumer_byte_rate", 2048.0)),
        entry([("user", None), ("client-id", "c1")], ("producer_byte_rate", 10.0)),
        entry([("user", "bob")], ("request_percentage", 50.0)),
        entry([("user", "carol")], ("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)),
    ])
    assert [(e.error_code, [(x.entity_type, x.entity_name) for x in e.entity]) for e in altered.entries] == [
        (E.none, [("user", "alice")]), (E.none, [("user", None), ("client-id", "c1")]),
        (E.invalid_request, [("user", "bob")]), (E.invalid_request, [("user", "carol")])]
    assert "does not enforce request_percentage" in altered.entries[2].error_message
    assert "Duplicate quota key producer_byte_rate" in altered.entries[3].error_message

    strict = await call(state, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, strict=True, components=any_user)
    assert [([(x.entity_type, x.entity_name) for x in e.entity], [(v.key, v.value) for v in e.values])
            for e in strict.entries] == [([("user", "alice")], [("consumer_byte_rate", 2048.0),
                                                                 ("producer_byte_rate", 1024.0)])]
    loose = await call(state, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, strict=False, components=any_user)
    assert len(loose.entries) == 2

    removed = await call(state, ApiKey.ALTER_CLIENT_QUOTAS, 1, validate_only=False, entries=[
        entry([("user", "alice")], ("producer_byte_rate", None), ("consumer_byte_rate", None))])
    assert removed.entries[0].error_code == E.none
    assert len((await call(state, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, strict=False, components=any_user)).entries) == 1

    twice = await call(state, ApiKey.ALTER_CLIENT_QUOTAS, 1, validate_only=False, entries=[
        entry([("user", "dan")], ("producer_byte_rate", 5.0)), entry([("user", "dan")], ("producer_byte_rate", 6.0))])
    assert [e.error_code for e in twice.entries] == [E.none, E.invalid_request]
    assert "Ignoring duplicate entity" in twice.entries[1].error_message
    many = await call(state, ApiKey.ALTER_CLIENT_QUOTAS, 1, validate_only=False, entries=[
        entry([("user", f"u{i}")], ("producer_byte_rate", 5.0)) for i in range(10_001)])
    assert {(e.error_code, e.error_message) for e in many.entries} == {
        (E.policy_violation, "Unable to perform excessively large batch operation.")}
    assert len(state.quotas.entries) == 2  # c1's and dan's


async def test_no_user_has_scram_credentials(state: BrokerState) -> None:
    everyone = await call(state, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=None)
    assert everyone.error_code == E.none and everyone.results == ()
    named = await call(state, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0,
                       users=[{"name": "alice"}, {"name": "bob"}, {"name": "bob"}])
    assert [(r.user, r.error_code) for r in named.results] == [("alice", E.resource_not_found),
                                                                ("bob", E.duplicate_resource)]


async def test_update_features_accepts_only_the_finalized_level(state: BrokerState) -> None:
    updates = [{"feature": "metadata.version", "max_version_level": 25, "upgrade_type": 1},
               {"feature": "metadata.version", "max_version_level": 26, "upgrade_type": 1},
               {"feature": "group.version", "max_version_level": 0, "upgrade_type": 2}]
    v1 = await call(state, ApiKey.UPDATE_FEATURES, 1, timeout=1000, feature_updates=updates[1:], validate_only=False)
    assert (v1.error_code, v1.results) == (E.invalid_update_version, ())
    v1 = await call(state, ApiKey.UPDATE_FEATURES, 1, timeout=1000, feature_updates=updates[:1], validate_only=False)
    assert [(r.feature, r.error_code) for r in v1.results] == [("metadata.version", E.none)]
    v2 = await call(state, ApiKey.UPDATE_FEATURES, 2, timeout=1000, feature_updates=updates[1:], validate_only=True)
    assert v2.error_code == E.invalid_update_version
    assert v2.error_message.startswith("The update failed for all features since the following feature had an "
                                       "error: Invalid update version 26 for feature metadata.version.")
    same = await call(state, ApiKey.UPDATE_FEATURES, 2, timeout=1000, feature_updates=updates[:1], validate_only=False)
    assert same.error_code == E.none
