"""Bad and edge-case group requests on the wire, answered with the errors Kafka gives; the group
stays usable afterwards."""

from __future__ import annotations

import pytest
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.describe_groups.v6.request import DescribeGroupsRequest as DescribeV6
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v0.request import FindCoordinatorRequest as FindV0
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest as FindV3
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest as FindV4
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.leave_group.v0.request import LeaveGroupRequest as LeaveV0
from kio.schema.leave_group.v5.request import LeaveGroupRequest, MemberIdentity
from kio.schema.list_groups.v4.request import ListGroupsRequest
from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_fetch.v8.request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.static.primitive import i8, i32, i64

from tests.e2e.group_wire import WireClient
from tests.e2e.test_consumer_groups import SETTINGS, TOPIC
from tests.e2e.txn_clients import create_topics

pytestmark = pytest.mark.e2e

SUBSCRIPTION = b"\x00\x00\x00\x00\x00\x01\x00\x06events\xff\xff\xff\xff"


@pytest.fixture
def wire(broker_factory):  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    create_topics(broker.bootstrap, [TOPIC], 6)
    with WireClient(broker.bootstrap) as client:
        yield client


def join(client: WireClient, group: str, member_id: str = "", instance: str | None = None):  # type: ignore[no-untyped-def]
    import datetime

    return client.send(JoinGroupRequest(
        group_id=group, session_timeout=datetime.timedelta(seconds=10),
        rebalance_timeout=datetime.timedelta(seconds=10), member_id=member_id,
        group_instance_id=instance, protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION),),
    ))


def stable_member(client: WireClient, group: str) -> tuple[str, int]:
    first = join(client, group)
    assert first.error_code is ErrorCode.member_id_required
    joined = join(client, group, first.member_id)
    assert joined.error_code is ErrorCode.none and joined.leader == joined.member_id
    sync = client.send(SyncGroupRequest(
        group_id=group, generation_id=joined.generation_id, member_id=joined.member_id,
        group_instance_id=None, protocol_type="consumer", protocol_name="range",
        assignments=(SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"a"),),
    ))
    assert sync.error_code is ErrorCode.none and sync.assignment == b"a"
    return joined.member_id, joined.generation_id


def heartbeat(client: WireClient, group: str, member: str, generation: int) -> ErrorCode:
    return client.send(HeartbeatRequest(
        group_id=group, generation_id=i32(generation), member_id=member, group_instance_id=None,
    )).error_code


def commit(client: WireClient, group: str, member: str, generation: int, metadata: str = "") -> ErrorCode:
    response = client.send(OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=i32(generation), member_id=member,
        group_instance_id=None,
        topics=(OffsetCommitRequestTopic(name=TOPIC, partitions=(OffsetCommitRequestPartition(
            partition_index=i32(0), committed_offset=i64(3), committed_leader_epoch=i32(-1),
            committed_metadata=metadata),)),),
    ))
    [topic] = response.topics
    [partition] = topic.partitions
    return partition.error_code


def fetch(client: WireClient, group: str) -> tuple[int, ErrorCode]:
    response = client.send(OffsetFetchRequest(
        groups=(OffsetFetchRequestGroup(group_id=group, topics=(
            OffsetFetchRequestTopics(name=TOPIC, partition_indexes=(i32(0),)),)),),
        require_stable=True,
    ))
    [g] = response.groups
    [t] = g.topics
    [p] = t.partitions
    return p.committed_offset, p.error_code


def test_unknown_member_heartbeat(wire: WireClient) -> None:
    member, generation = stable_member(wire, "g")
    assert heartbeat(wire, "g", "intruder", generation) is ErrorCode.unknown_member_id
    assert heartbeat(wire, "nope", "intruder", 1) is ErrorCode.unknown_member_id
    assert heartbeat(wire, "g", member, generation) is ErrorCode.none
    assert heartbeat(wire, "g", member, generation + 1) is ErrorCode.illegal_generation


def test_stale_generation_commit_is_refused_and_group_stays_stable(wire: WireClient) -> None:
    member, generation = stable_member(wire, "g")
    assert commit(wire, "g", member, generation - 1) is ErrorCode.illegal_generation
    assert commit(wire, "g", "", -1) is ErrorCode.unknown_member_id
    assert fetch(wire, "g") == (-1, ErrorCode.none)
    assert commit(wire, "g", member, generation) is ErrorCode.none
    assert fetch(wire, "g") == (3, ErrorCode.none)
    [described] = wire.send(DescribeGroupsRequest(groups=("g",), include_authorized_operations=False)).groups
    assert described.group_state == "Stable" and [m.member_id for m in described.members] == [member]
    # v6 (KIP-1043): the same for a classic group, GROUP_ID_NOT_FOUND with a message for a missing one.
    g, nope = wire.send(DescribeV6(groups=("g", "nope"), include_authorized_operations=False)).groups
    assert (g.error_code, g.error_message, g.group_state, g.protocol_type) == (ErrorCode.none, None, "Stable",
                                                                              "consumer")
    assert g.members[0].member_assignment == b"a" and g.protocol_data == "range"
    assert (nope.error_code, nope.error_message, nope.group_state) == (ErrorCode.group_id_not_found,
                                                                       "Group nope not found.", "Dead")


def test_oversized_offset_metadata(wire: WireClient) -> None:
    assert commit(wire, "solo", "", -1, metadata="x" * 4097) is ErrorCode.offset_metadata_too_large
    assert commit(wire, "solo", "", -1, metadata="x" * 4096) is ErrorCode.none


def test_empty_group_id(wire: WireClient) -> None:
    assert join(wire, "").error_code is ErrorCode.invalid_group_id
    assert heartbeat(wire, "", "m", 1) is ErrorCode.invalid_group_id
    assert wire.send(LeaveV0(group_id="", member_id="m")).error_code is ErrorCode.invalid_group_id
    # Offsets of the empty group id stay allowed, as in Kafka (backwards compatibility).
    assert commit(wire, "", "", -1) is ErrorCode.none
    assert fetch(wire, "") == (3, ErrorCode.none)


def test_batched_leave_and_listing(wire: WireClient) -> None:
    member, _ = stable_member(wire, "g")
    response = wire.send(LeaveGroupRequest(group_id="g", members=(
        MemberIdentity(member_id=member, group_instance_id=None),
        MemberIdentity(member_id="ghost", group_instance_id=None),
    )))
    assert response.error_code is ErrorCode.none
    assert [m.error_code for m in response.members] == [ErrorCode.none, ErrorCode.unknown_member_id]
    listed = wire.send(ListGroupsRequest(states_filter=("Empty",))).groups
    assert [(g.group_id, g.group_state) for g in listed] == [("g", "Empty")]


def test_find_coordinator_every_version(wire: WireClient) -> None:
    port = int(wire.sock.getpeername()[1])
    v0 = wire.send(FindV0(key="g"))
    assert (v0.error_code, v0.port) == (ErrorCode.none, port)
    v3 = wire.send(FindV3(key="t", key_type=i8(1)))
    assert (v3.error_code, v3.port) == (ErrorCode.none, port)
    v4 = wire.send(FindV4(key_type=i8(0), coordinator_keys=("a", "b")))
    assert [(c.key, c.error_code, c.port) for c in v4.coordinators] == [
        ("a", ErrorCode.none, port), ("b", ErrorCode.none, port),
    ]
    bad = wire.send(FindV4(key_type=i8(7), coordinator_keys=("a",)))
    assert bad.coordinators[0].error_code is ErrorCode.invalid_request


def test_member_metadata_too_large_for_the_group_record(wire: WireClient) -> None:
    """A subscription bigger than __consumer_offsets' max.message.bytes: the group record cannot
    be written, so SyncGroup fails as Kafka fails it (UNKNOWN_SERVER_ERROR) and the group goes
    back to rebalancing instead of handing out an assignment it could not persist."""
    import datetime

    huge = SUBSCRIPTION + b"\x00" * (2 << 20)
    request = JoinGroupRequest(
        group_id="big", session_timeout=datetime.timedelta(seconds=10),
        rebalance_timeout=datetime.timedelta(seconds=10), member_id="", group_instance_id=None,
        protocol_type="consumer", protocols=(JoinGroupRequestProtocol(name="range", metadata=huge),),
    )
    first = wire.send(request)
    assert first.error_code is ErrorCode.member_id_required
    joined = wire.send(JoinGroupRequest(
        group_id="big", session_timeout=request.session_timeout,
        rebalance_timeout=request.rebalance_timeout, member_id=first.member_id,
        group_instance_id=None, protocol_type="consumer", protocols=request.protocols,
    ))
    assert joined.error_code is ErrorCode.none and len(joined.members[0].metadata) == len(huge)
    sync = wire.send(SyncGroupRequest(
        group_id="big", generation_id=joined.generation_id, member_id=joined.member_id,
        group_instance_id=None, protocol_type="consumer", protocol_name="range",
        assignments=(SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"a"),),
    ))
    assert sync.error_code is ErrorCode.unknown_server_error
    assert heartbeat(wire, "big", joined.member_id, joined.generation_id) is (
        ErrorCode.rebalance_in_progress
    )
    # A normal-sized member still gets a working group.
    member, generation = stable_member(wire, "small")
    assert heartbeat(wire, "small", member, generation) is ErrorCode.none
