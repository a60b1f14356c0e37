"""CreateAcls, DescribeAcls and DeleteAcls in process with an authorizer: per-item answers (one bad
creation or filter does not fail the others), grouping by resource pattern, and the CLUSTER
permission each needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from broker.authorizer.standard import StandardAuthorizer
from broker.dispatch import dispatch
from broker.handler import RequestContext
from broker.principal import ANONYMOUS, KafkaPrincipal, Session
from broker.state import BrokerState
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import RequestHeader, decode_response, request_schema
from protocol.errors import ErrorCode
from storage.acl_store import AclFileStore

E = ErrorCode
ADMIN = Session(principal=KafkaPrincipal("User", "admin"), listener_name="PLAINTEXT", security_protocol="PLAINTEXT",
                client_host="127.0.0.1")
ALICE = {"principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3}  # READ, ALLOW


@pytest.fixture
async def state(broker_state, tmp_path: Path) -> BrokerState:  # type: ignore[no-untyped-def]
    state: BrokerState = await broker_state()
    state.authorizer = StandardAuthorizer(super_users=frozenset({"User:admin"}), allow_everyone_if_no_acl_found=False,
                                          store=AclFileStore(tmp_path))
    return state


async def call(state: BrokerState, key: ApiKey, session: Session = ADMIN, **fields: Any) -> Any:
    """The response as a client decodes it (through dispatch, which answers a raised KafkaError)."""
    request = build(request_schema(key, 3), fields)
    header = RequestHeader(api_key=key, api_version=3, correlation_id=7, client_id="test")
    encoded = await dispatch(RequestContext(header=header, broker=state, peer="test", session=session), request)
    assert encoded is not None
    return decode_response(encoded[4:], key, 3)[1]


def creation(name: str, rtype: int = 2, pattern: int = 3, **acl: Any) -> dict[str, Any]:
    return {"resource_type": rtype, "resource_name": name, "resource_pattern_type": pattern, **(ALICE | acl)}


def wire_filter(**fields: Any) -> dict[str, Any]:
    base = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
            "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}
    return base | fields


async def test_each_creation_is_answered_on_its_own(state: BrokerState) -> None:
    response = await call(state, ApiKey.CREATE_ACLS, creations=[
        creation("orders"), creation("", 2), creation("other", 4), creation("pay", pattern=4),
        creation("x", principal="alice")])
    assert [(r.error_code, r.error_message) for r in response.results] == [
        (E.none, None), (E.invalid_request, "Resource name should not be empty"),
        (E.invalid_request, "The only valid name for the CLUSTER resource is kafka-cluster"), (E.none, None),
        (E.invalid_request, "Could not parse principal 'alice': expected Type:name, as in User:alice")]
    described = await call(state, ApiKey.DESCRIBE_ACLS, **wire_filter())
    assert described.error_code == E.none
    assert [(r.resource_name, r.pattern_type, [a.principal for a in r.acls]) for r in described.resources] == [
        ("orders", 3, ["User:alice"]), ("pay", 4, ["User:alice"])]


async def test_delete_reports_what_each_filter_removed(state: BrokerState) -> None:
    await call(state, ApiKey.CREATE_ACLS, creations=[creation("orders"), creation("pay", pattern=4)])
    response = await call(state, ApiKey.DELETE_ACLS, filters=[
        wire_filter(resource_type_filter=2, resource_name_filter="payments", pattern_type_filter=2),
        wire_filter(operation=0)])
    first, second = response.filter_results
    assert first.error_code == E.none
    assert [(m.resource_name, m.pattern_type, m.operation) for m in first.matching_acls] == [("pay", 4, 3)]
    assert second.error_code == E.invalid_request and second.matching_acls == ()
    assert [r.resource_name for r in (await call(state, ApiKey.DESCRIBE_ACLS, **wire_filter())).resources] == [
        "orders"]


async def test_acl_apis_need_cluster_permissions(state: BrokerState) -> None:
    anonymous = Session(principal=ANONYMOUS, listener_name="PLAINTEXT", security_protocol="PLAINTEXT",
                        client_host="127.0.0.1")
    described = await call(state, ApiKey.DESCRIBE_ACLS, anonymous, **wire_filter())
    assert described.error_code == E.cluster_authorization_failed
    assert described.error_message == "Principal User:ANONYMOUS is not authorized to DESCRIBE CLUSTER 'kafka-cluster'"
    created = await call(state, ApiKey.CREATE_ACLS, anonymous, creations=[creation("orders")])
    assert created.results[0].error_code == E.cluster_authorization_failed
    deleted = await call(state, ApiKey.DELETE_ACLS, anonymous, filters=[wire_filter()])
    assert deleted.filter_results[0].error_code == E.cluster_authorization_failed
