"""ConsumerGroupHeartbeat, ConsumerGroupDescribe and the group listings, in process over a real
GroupCoordinator: what each answers on the wire for a consumer-protocol (KIP-848) group."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from broker.state import BrokerState
from coordinator.group.config import GroupConfig
from coordinator.group.coordinator import GroupCoordinator
from coordinator.group.offsets import OffsetAndMetadata
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from storage.api import TopicPartition
from tests.broker.test_admin_handlers import call

E = ErrorCode
JOIN = {"group_id": "g", "member_id": "m1", "member_epoch": 0, "rebalance_timeout": 30_000,
        "subscribed_topic_names": ["t"], "topic_partitions": [], "instance_id": None, "rack_id": None,
        "server_assignor": None}


@pytest.fixture
async def state(broker_state) -> AsyncIterator[BrokerState]:  # type: ignore[no-untyped-def]
    s = await broker_state(t=2)
    s.group_coordinator = GroupCoordinator(s.logs, GroupConfig(offsets_topic_num_partitions=1))
    await s.group_coordinator.start()
    yield s
    await s.group_coordinator.stop()


async def test_heartbeat_joins_and_assigns_by_topic_id(state: BrokerState) -> None:
    r = await call(state, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, **JOIN)
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval.total_seconds()) == (E.none, "m1", 1, 5)
    [tp] = r.assignment.topic_partitions
    assert (tp.topic_id, tp.partitions) == (state.logs.topics["t"].topic_id, (0, 1))
    beat = {"member_epoch": 1, "topic_partitions": None, "subscribed_topic_names": None, "rebalance_timeout": -1}
    again = await call(state, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, **JOIN | beat)
    assert again.member_epoch == 1 and again.assignment is None  # nothing changed: no assignment sent


async def test_heartbeat_errors_carry_kafkas_messages(state: BrokerState) -> None:
    r = await call(state, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, **JOIN | {"server_assignor": "sticky"})
    assert r.error_code == E.unsupported_assignor and "Supported assignors: uniform, range." in r.error_message
    r = await call(state, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, **JOIN | {"rebalance_timeout": -1})
    assert (r.error_code, r.error_message) == (E.invalid_request,
                                               "RebalanceTimeoutMs must be provided in first request.")
    await call(state, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, **JOIN)
    r = await call(state, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, **JOIN | {"member_epoch": 9})
    assert r.error_code == E.fenced_member_epoch and r.member_epoch == -1


async def test_describe_and_list_report_the_consumer_group(state: BrokerState) -> None:
    await call(state, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, **JOIN)
    d = await call(state, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=["g", "nope"],
                   include_authorized_operations=False)
    g, nope = d.groups
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == (
        E.none, "Stable", 1, 1, "uniform")
    [m] = g.members
    assert (m.member_id, m.member_epoch, m.subscribed_topic_names, m.member_type) == ("m1", 1, ("t",), 1)
    assert [(t.topic_name, t.partitions) for t in m.assignment.topic_partitions] == [("t", (0, 1))]
    assert (nope.error_code, nope.error_message) == (E.group_id_not_found, "Group nope not found.")
    listed = await call(state, ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=["Consumer"])
    assert [(x.group_id, x.group_type, x.group_state, x.protocol_type) for x in listed.groups] == [
        ("g", "consumer", "Stable", "consumer")]
    assert (await call(state, ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=["classic"])).groups == ()
    classic = await call(state, ApiKey.DESCRIBE_GROUPS, 5, groups=["g"], include_authorized_operations=False)
    assert (classic.groups[0].error_code, classic.groups[0].group_state) == (E.none, "Dead")


async def test_describe_groups_v6_says_group_id_not_found_with_kafkas_messages(state: BrokerState) -> None:
    # KIP-1043: from v6 a group that is not a classic group (unknown, or of the consumer
    # protocol) carries GROUP_ID_NOT_FOUND and a message; below v6 it is only Dead.
    await call(state, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, **JOIN)
    offsets = {TopicPartition("t", 0): OffsetAndMetadata(committed_offset=3)}
    await state.group_coordinator.commit_offsets("classic", offsets)
    r = await call(state, ApiKey.DESCRIBE_GROUPS, 6, groups=["g", "nope", "classic"],
                   include_authorized_operations=False)
    g, nope, classic = r.groups
    assert (g.error_code, g.error_message, g.group_state, g.members) == (
        E.group_id_not_found, "Group g is not a classic group.", "Dead", ())
    assert (nope.error_code, nope.error_message, nope.group_state) == (
        E.group_id_not_found, "Group nope not found.", "Dead")
    assert (classic.error_code, classic.error_message, classic.group_state) == (E.none, None, "Empty")
    old = await call(state, ApiKey.DESCRIBE_GROUPS, 5, groups=["nope"], include_authorized_operations=False)
    assert (old.groups[0].error_code, old.groups[0].group_state) == (E.none, "Dead")
