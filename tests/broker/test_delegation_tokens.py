"""The delegation-token APIs (KIP-48): eosbroker has no tokens, and answers as Kafka with token
authentication disabled (its default): REQUEST_NOT_ALLOWED on a PLAINTEXT or anonymous SSL
channel, AUTH_DISABLED on an authenticated one. kafka-delegation-tokens failed before with "The
node does not support CREATE_DELEGATION_TOKEN"."""

from __future__ import annotations

from typing import Any

import pytest

from broker.dispatch import HANDLERS
from broker.handler import RequestContext
from broker.principal import ANONYMOUS, KafkaPrincipal, Session
from broker.state import BrokerState
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import RequestHeader, encode_response, request_schema
from protocol.errors import ErrorCode

E = ErrorCode
ALICE = KafkaPrincipal("User", "alice")
REQUESTS: dict[ApiKey, tuple[int, dict[str, Any]]] = {
    ApiKey.CREATE_DELEGATION_TOKEN: (3, {"owner_principal_type": None, "owner_principal_name": None,
                                         "renewers": [], "max_lifetime": -1}),
    ApiKey.RENEW_DELEGATION_TOKEN: (2, {"hmac": b"x", "renew_period": -1}),
    ApiKey.EXPIRE_DELEGATION_TOKEN: (2, {"hmac": b"x", "expiry_time_period": -1}),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: (3, {"owners": None}),
}


@pytest.fixture
async def state(broker_state):  # type: ignore[no-untyped-def]
    return await broker_state()


async def answer(state: BrokerState, key: ApiKey, protocol: str, principal: KafkaPrincipal) -> Any:
    version, fields = REQUESTS[key]
    header = RequestHeader(api_key=key, api_version=version, correlation_id=7, client_id="test")
    session = Session(principal=principal, listener_name=protocol, security_protocol=protocol,
                      client_host="127.0.0.1")
    response = await HANDLERS[key].handle(RequestContext(header=header, broker=state, peer="test", session=session),
                                          build(request_schema(key, version), fields))
    assert encode_response(7, response)
    return response


@pytest.mark.parametrize("key", list(REQUESTS))
@pytest.mark.parametrize(("protocol", "principal", "error"), [
    ("PLAINTEXT", ANONYMOUS, E.delegation_token_request_not_allowed),
    ("SSL", ANONYMOUS, E.delegation_token_request_not_allowed),
    ("SSL", ALICE, E.delegation_token_auth_disabled),
    ("SASL_PLAINTEXT", ALICE, E.delegation_token_auth_disabled),
])
async def test_refused_as_kafka_with_token_authentication_disabled(state: BrokerState, key: ApiKey, protocol: str,
                                                                   principal: KafkaPrincipal, error: E) -> None:
    assert (await answer(state, key, protocol, principal)).error_code == error


async def test_create_names_the_caller_as_owner_and_requester(state: BrokerState) -> None:
    r = await answer(state, ApiKey.CREATE_DELEGATION_TOKEN, "SASL_SSL", ALICE)
    assert (r.principal_type, r.principal_name, r.token_requester_principal_name) == ("User", "alice", "alice")
    assert (r.token_id, r.hmac) == ("", b"")
    # timestamps -1, then token id "", hmac b"", throttle time 0, no tagged fields
    assert encode_response(7, r).endswith(b"\xff" * 24 + b"\x01\x01\x00\x00\x00\x00\x00")
