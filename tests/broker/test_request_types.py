"""Every handler receives a typed request: a union of kio's request classes over exactly the
versions it parses (protocol/request_types), or the typed view of a hand-read request (Produce,
Fetch). mypy --strict then checks each field a handler reads against every version served."""

import typing

import pytest

from broker.dispatch import HANDLERS
from broker.handler import Handler
from protocol.api_keys import ApiKey
from protocol.codec import request_schema
from protocol.fetch_request import FetchRequest
from protocol.produce_request import ProduceRequest

READ_BY_HAND = {ApiKey.PRODUCE: ProduceRequest, ApiKey.FETCH: FetchRequest}


def _request_type(handler: Handler) -> object:
    return typing.get_type_hints(handler.handle)["request"]


@pytest.mark.parametrize("key", sorted(HANDLERS), ids=lambda k: ApiKey(k).name)
def test_the_request_type_covers_exactly_the_versions_served(key: ApiKey) -> None:
    handler = HANDLERS[key]
    hint = _request_type(handler)
    if key in READ_BY_HAND:
        assert hint is READ_BY_HAND[key]
        return
    low = handler.min_version if handler.parse_min_version is None else handler.parse_min_version
    served = {request_schema(key, v) for v in range(low, handler.max_version + 1)}
    declared = set(typing.get_args(hint)) or {hint}
    assert declared == served, f"{key.name}: declared {sorted(c.__module__ for c in declared)}"


def test_a_version_range_narrows_by_class() -> None:
    # The handlers tell versions of different shapes apart with isinstance on these unions.
    from protocol.request_types.leave_group import LeaveGroupRequest, LeaveGroupRequestV3Plus

    assert set(typing.get_args(LeaveGroupRequestV3Plus)) < set(typing.get_args(LeaveGroupRequest))
    v2, v3 = request_schema(ApiKey.LEAVE_GROUP, 2), request_schema(ApiKey.LEAVE_GROUP, 3)
    assert not isinstance(v2(group_id="g", member_id="m"), LeaveGroupRequestV3Plus)
    assert isinstance(v3(group_id="g", members=()), LeaveGroupRequestV3Plus)
