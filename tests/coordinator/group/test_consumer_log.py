"""Consumer-group records of __consumer_offsets in Kafka's layouts (keys 3, 5, 6, 7, 8)."""

from __future__ import annotations

import uuid

import pytest

from coordinator.group.consumer_log import (
    CURRENT_MEMBER_ASSIGNMENT,
    GROUP_METADATA,
    MEMBER_METADATA,
    TARGET_ASSIGNMENT_MEMBER,
    ConsumerRecordKey,
    CurrentAssignment,
    consumer_record,
    decode_consumer_key,
    decode_consumer_value,
)
from coordinator.group.consumer_member import ClassicMemberMetadata, ConsumerGroupMember, MemberState

T = uuid.UUID("0123456789abcdef0123456789abcdef")


def test_group_epoch_record_bytes_are_kafkas() -> None:
    record = consumer_record(ConsumerRecordKey(record_type=GROUP_METADATA, group="g"), 5, timestamp=1)
    # key: version 3, int16-length string; value: version 0, Epoch int32, no tagged fields.
    assert record.key == b"\x00\x03\x00\x01g"
    assert record.value == b"\x00\x00\x00\x00\x00\x05\x00"


def test_target_assignment_bytes_are_kafkas() -> None:
    key = ConsumerRecordKey(record_type=TARGET_ASSIGNMENT_MEMBER, group="g", member_id="m")
    record = consumer_record(key, {T: frozenset({2, 1})}, timestamp=1)
    assert record.key == b"\x00\x07\x00\x01g\x00\x01m"
    # compact array of 1 (varint 2): uuid, compact array of 2 (varint 3) int32s, tags; tags.
    assert record.value == b"\x00\x00\x02" + T.bytes + b"\x03\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00"


@pytest.mark.parametrize("kind,value", [
    (GROUP_METADATA, 7),
    (MEMBER_METADATA, ConsumerGroupMember(member_id="m", instance_id="i", rack_id=None, client_id="c",
                                          client_host="/127.0.0.1", subscribed_topic_names=("a", "b"),
                                          subscribed_topic_regex="x.*", rebalance_timeout_ms=300_000,
                                          server_assignor="range")),
    (MEMBER_METADATA, ConsumerGroupMember(member_id="m", client_id="c", subscribed_topic_names=("a",),
                                          rebalance_timeout_ms=30_000, classic=ClassicMemberMetadata(
                                              session_timeout_ms=10_000,
                                              supported_protocols=(("range", b"\x00\x01"), ("sticky", b""))))),
    (TARGET_ASSIGNMENT_MEMBER, {T: frozenset({0, 3})}),
    (CURRENT_MEMBER_ASSIGNMENT, CurrentAssignment(member_epoch=4, previous_member_epoch=3,
                                                  state=MemberState.UNREVOKED_PARTITIONS,
                                                  assigned={T: frozenset({1, 5})},
                                                  pending_revocation={T: frozenset({2})},
                                                  assignment_epochs={T: {1: 4, 5: 2, 2: 1}})),
])
def test_records_round_trip(kind: int, value: object) -> None:
    key = ConsumerRecordKey(record_type=kind, group="group-é", member_id=None if kind == GROUP_METADATA else "m")
    record = consumer_record(key, value, timestamp=1)  # type: ignore[arg-type]
    assert record.key is not None and record.value is not None
    decoded_key = decode_consumer_key(record.key)
    assert decoded_key == key
    assert decode_consumer_value(decoded_key, record.value) == value


def test_a_tombstone_has_no_value_and_garbage_is_refused() -> None:
    key = ConsumerRecordKey(record_type=MEMBER_METADATA, group="g", member_id="m")
    assert consumer_record(key, None, timestamp=1).value is None
    with pytest.raises(ValueError):
        decode_consumer_key(b"\x00\x02\x00\x01g")
    with pytest.raises((ValueError, IndexError)):
        decode_consumer_value(key, b"\x00\x00\x05")


def test_classic_member_metadata_is_tagged_field_0_in_kafkas_layout() -> None:
    member = ConsumerGroupMember(member_id="m", classic=ClassicMemberMetadata(
        session_timeout_ms=10_000, supported_protocols=(("r", b"\x07"),)))
    value = consumer_record(ConsumerRecordKey(record_type=MEMBER_METADATA, group="g", member_id="m"), member,
                            timestamp=1).value
    assert value is not None
    # ... ServerAssignor null, then 1 tagged field: tag 0, 11 bytes: SessionTimeoutMs, a compact array
    # of 1 (Name "r", Metadata 0x07, no tags), no tags.
    assert value.endswith(b"\x00" + b"\x01\x00\x0b" + (10_000).to_bytes(4, "big") + b"\x02\x02r\x02\x07\x00\x00")


def test_a_current_assignment_without_assignment_epochs_reads_as_held_since_its_epoch() -> None:
    """A record Kafka before 4.3 wrote (no tag 0 on its topics): the member's partitions count as
    assigned at its member epoch, as Kafka 4.3+ reads them (KIP-1251)."""
    key = ConsumerRecordKey(record_type=CURRENT_MEMBER_ASSIGNMENT, group="g", member_id="m")
    # version 0, MemberEpoch 4, PreviousMemberEpoch 3, State 2, AssignedPartitions [T: [1]], none pending
    value = (b"\x00\x00" + (4).to_bytes(4, "big") + (3).to_bytes(4, "big") + b"\x02"
             + b"\x02" + T.bytes + b"\x02" + (1).to_bytes(4, "big") + b"\x00" + b"\x01" + b"\x00")
    current = decode_consumer_value(key, value)
    assert isinstance(current, CurrentAssignment)
    assert (current.assigned, current.assignment_epochs) == ({T: frozenset({1})}, {})
    member = ConsumerGroupMember(member_id="m", member_epoch=4, assigned=current.assigned)
    assert member.assignment_epoch(T, 1) == 4 and member.assignment_epoch(T, 2) is None
    # written again, the epochs are explicit: Kafka's tag 0 with one epoch per partition
    again = consumer_record(key, current, timestamp=1).value
    assert again is not None and again.endswith(
        T.bytes + b"\x02" + (1).to_bytes(4, "big") + b"\x01\x00\x05\x02" + (4).to_bytes(4, "big") + b"\x01\x00")
