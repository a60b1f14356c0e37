"""Quota entities and keys, checked with Kafka's controller's rules and messages."""

from types import SimpleNamespace

import pytest

from broker.quotas.entities import check_entity, check_value, filter_of, from_store, matches, to_store
from protocol.errors import ErrorCode, KafkaError


def refused(call, *args) -> KafkaError:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaError) as caught:
        call(*args)
    return caught.value


def test_entities_and_their_keys():
    entity, keys = check_entity([("user", "alice"), ("client-id", None)])
    assert entity == (("client-id", None), ("user", "alice"))
    assert "producer_byte_rate" in keys and "connection_creation_rate" not in keys
    assert check_entity([("ip", "10.0.0.1")])[1] == {"connection_creation_rate": "int"}
    assert check_entity([("ip", None)])[0] == (("ip", None),)


@pytest.mark.parametrize("pairs, message", [
    ([], "Invalid empty client quota entity"),
    ([("user", "a"), ("user", "b")], "Invalid client quota entity, duplicate entity entry user"),
    ([("group", "g")], "Unhandled client quota entity type: group"),
    ([("client-id", "")], "Empty client-id not supported"),
    ([("ip", "1.2.3.4"), ("user", "a")], "Invalid quota entity combination"),
    ([("ip", "not-an-ip")], "not-an-ip is not a valid IP or resolvable host."),
])
def test_entities_kafka_refuses(pairs, message):
    error = refused(check_entity, pairs)
    assert error.code == ErrorCode.invalid_request and message in (error.message or "")


@pytest.mark.parametrize("key, value, message", [
    ("producer_bytes_rate", 1.0, "Invalid configuration key producer_bytes_rate"),
    ("producer_byte_rate", 0.0, "Quota producer_byte_rate must be greater than 0"),
    ("consumer_byte_rate", 1.5, "consumer_byte_rate cannot be a fractional value."),
    ("consumer_byte_rate", 2.0**64, "too large for a LONG"),
    ("request_percentage", 50.0, "eosbroker does not enforce request_percentage quotas"),
    ("controller_mutation_rate", 10.0, "does not enforce controller_mutation_rate"),
])
def test_values_refused(key, value, message):
    keys = check_entity([("user", "a")])[1]
    error = refused(check_value, keys, key, value)
    assert error.code == ErrorCode.invalid_request and message in (error.message or "")


def test_enforced_keys_pass():
    keys = check_entity([("client-id", "c")])[1]
    check_value(keys, "producer_byte_rate", 1024.0)
    check_value(keys, "consumer_byte_rate", 1.0)
    entity, ip_keys = check_entity([("ip", "::ffff:10.0.0.1")])
    assert entity == (("ip", "10.0.0.1"),)  # counted under the spelling connections have
    check_value(ip_keys, "connection_creation_rate", 2.0)
    assert "fractional" in (refused(check_value, ip_keys, "connection_creation_rate", 2.5).message or "")


def test_store_names_round_trip_and_stay_apart_from_other_entities():
    entity = (("client-id", "a\"b"), ("user", None))
    assert from_store(to_store(entity)) == entity
    assert from_store("1") is None and from_store("") is None


def c(entity_type, match_type, match=None):  # type: ignore[no-untyped-def]
    return SimpleNamespace(entity_type=entity_type, match_type=match_type, match=match)


def test_filters_match_as_kafka_does():
    alice = (("user", "alice"),)
    alice_c1 = (("client-id", "c1"), ("user", "alice"))
    default_user = (("user", None),)
    exact, typed = filter_of([c("user", 0, "alice")])
    assert [matches(e, exact, typed, False) for e in (alice, alice_c1, default_user)] == [True, True, False]
    assert [matches(e, exact, typed, True) for e in (alice, alice_c1, default_user)] == [True, False, False]
    exact, typed = filter_of([c("user", 1)])
    assert [matches(e, exact, typed, False) for e in (alice, alice_c1, default_user)] == [False, False, True]
    exact, typed = filter_of([c("user", 2)])
    assert [matches(e, exact, typed, True) for e in (alice, alice_c1, default_user)] == [True, False, True]
    exact, typed = filter_of([])
    assert matches(alice_c1, exact, typed, False) and not matches(alice_c1, exact, typed, True)


@pytest.mark.parametrize("components, code, message", [
    ([c("user", 2), c("user", 0, "a")], ErrorCode.invalid_request, "cannot appear more than once"),
    ([c("user", 0)], ErrorCode.invalid_request, "MATCH_TYPE_EXACT, but set match string to null"),
    ([c("user", 1, "a")], ErrorCode.invalid_request, "MATCH_TYPE_DEFAULT, but also specified a match string"),
    ([c("user", 7)], ErrorCode.invalid_request, "Unknown match type 7"),
    ([c("ip", 2), c("client-id", 2)], ErrorCode.invalid_request, "IP filter component should not be used"),
    ([c("group", 2)], ErrorCode.unsupported_version, "Unsupported entity type group"),
    ([c("", 2)], ErrorCode.invalid_request, "Invalid empty entity type."),
])
def test_filters_kafka_refuses(components, code, message):
    error = refused(filter_of, components)
    assert error.code == code and message in (error.message or "")
