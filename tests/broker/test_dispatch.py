"""The dispatch table is what ApiVersions advertises; every advertised version must be parseable
(or deliberately refused, as Produce v0-2 are) with kio's schemas."""

import logging

import pytest

from broker import handler as handler_module
from broker.dispatch import HANDLERS, supported
from broker.handler import RequestContext
from broker.principal import LOCAL_ANONYMOUS
from protocol.api_keys import ApiKey
from protocol.build import MissingFieldError, UnknownFieldError, build
from protocol.codec import RequestHeader, request_schema, response_schema
from protocol.errors import ErrorCode

PARSED = [(h.api_key, v) for h in HANDLERS.values() for v in range(h.min_version, h.max_version + 1) if h.parses(v)]


@pytest.mark.parametrize("key,version", PARSED, ids=lambda x: str(getattr(x, "name", x)))
def test_every_advertised_version_has_schemas(key, version):
    assert request_schema(key, version).__version__ == version
    assert response_schema(key, version).__api_key__ == key


def test_produce_v0_to_v2_are_advertised_but_not_parsed():
    produce = HANDLERS[ApiKey.PRODUCE]
    assert produce.min_version == 0
    assert [v for v in range(0, 4) if supported(ApiKey.PRODUCE, v)] == [3]


def test_versions_outside_the_table_are_unsupported():
    for handler in HANDLERS.values():
        assert not supported(handler.api_key, handler.max_version + 1)
    assert not supported(9999, 0)


def test_client_floor_versions_are_served():
    # What the clients in protocol-notes.md send first; a gap here breaks them at connect time.
    for key, version in [(ApiKey.API_VERSIONS, 3), (ApiKey.API_VERSIONS, 4), (ApiKey.METADATA, 12),
                         (ApiKey.PRODUCE, 9), (ApiKey.PRODUCE, 10), (ApiKey.FETCH, 12),
                         (ApiKey.LIST_OFFSETS, 7)]:
        assert supported(key, version), (key.name, version)


async def test_a_handler_cannot_answer_a_misspelt_field(broker_state):
    state = await broker_state(t=1)
    header = RequestHeader(api_key=ApiKey.FIND_COORDINATOR, api_version=4, correlation_id=1, client_id="t")
    ctx = RequestContext(header=header, broker=state, peer="test", session=LOCAL_ANONYMOUS)
    with pytest.raises(UnknownFieldError, match="'erorr_code'"):
        ctx.respond({"throttle_time": 0, "coordinators": [{"key": "g", "node_id": 1, "host": "h", "port": 1,
                                                            "erorr_code": 15}]})
    assert ctx.respond({"throttle_time": 0, "coordinators": []}).coordinators == ()


async def test_a_handler_cannot_answer_a_success_missing_a_field(broker_state):
    # The suite runs strict (tests/conftest.py sets EOSBROKER_STRICT_RESPONSES before the broker
    # is imported, and the brokers it starts inherit it).
    assert handler_module._MISSING is handler_module._refuse_missing
    state = await broker_state(t=1)
    header = RequestHeader(api_key=ApiKey.FIND_COORDINATOR, api_version=4, correlation_id=1, client_id="t")
    ctx = RequestContext(header=header, broker=state, peer="test", session=LOCAL_ANONYMOUS)
    with pytest.raises(MissingFieldError, match="Coordinator v4 built without port"):
        ctx.respond({"coordinators": [{"key": "g", "node_id": 1, "host": "h", "error_code": 0}]})
    # An error item may leave its node at the defaults, as Kafka's error answers do.
    answer = ctx.respond({"coordinators": [{"key": "g", "error_code": ErrorCode.coordinator_not_available}]})
    assert (answer.coordinators[0].node_id, answer.coordinators[0].host) == (0, "")


def test_production_logs_a_missing_field_once_and_answers_the_default(caplog):
    schema = response_schema(ApiKey.FIND_COORDINATOR, 4)
    success = {"coordinators": [{"key": "g", "node_id": 1, "host": "h"}]}
    with caplog.at_level(logging.WARNING, logger="broker.handler"):
        answers = [build(schema, success, handler_module._fill_missing) for _ in range(2)]
    assert answers[0].coordinators[0].port == 0
    assert [r.getMessage() for r in caplog.records] == [
        "Coordinator v4 answered without port (left at the default; a broker bug worth reporting)"]
