"""__consumer_offsets records: Kafka's key/value layouts, every version, and partitioning."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator.group.log import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitKey,
    group_metadata_record,
    offset_commit_record,
    parse_record,
    partition_for,
)
from coordinator.group.offsets import OffsetAndMetadata
from protocol.records import Record, build_batch, read_records
from storage.api import TopicPartition


@pytest.mark.parametrize(
    ("group", "partition"),
    [("hello", 22), ("Hello World", 26), ("polygenelubricants", 0), ("", 0)],
)
def test_partition_for(group: str, partition: int) -> None:
    assert partition_for(group, 50) == partition


@given(st.text(), st.integers(1, 1000))
def test_partition_in_range(group: str, n: int) -> None:
    assert 0 <= partition_for(group, n) < n


def test_offset_commit_key_layout() -> None:
    rec = offset_commit_record("g", TopicPartition("t", 3), None, timestamp=0)
    assert rec.key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    assert rec.value is None


def test_offset_commit_value_v3_layout() -> None:
    value = OffsetAndMetadata(
        committed_offset=7, committed_leader_epoch=2, metadata="m", commit_timestamp=9
    )
    rec = offset_commit_record("g", TopicPartition("t", 0), value, timestamp=9)
    assert rec.value == struct.pack(">hqih1sq", 3, 7, 2, 1, b"m", 9)


offsets = st.builds(
    OffsetAndMetadata,
    committed_offset=st.integers(-1, 2**63 - 1),
    committed_leader_epoch=st.integers(-1, 2**31 - 1),
    metadata=st.text(max_size=50),
    commit_timestamp=st.integers(0, 2**62),
    expire_timestamp=st.none() | st.integers(0, 2**62),
)


@given(st.text(min_size=0, max_size=30), st.text(max_size=30), st.integers(0, 2**31 - 1), offsets)
def test_offset_commit_round_trip(
    group: str, topic: str, partition: int, value: OffsetAndMetadata
) -> None:
    rec = offset_commit_record(group, TopicPartition(topic, partition), value, timestamp=0)
    key, decoded = parse_record(rec)
    assert key == OffsetCommitKey(group=group, topic=topic, partition=partition)
    if value.expire_timestamp is not None:  # v1 has no leader epoch
        value = OffsetAndMetadata(
            committed_offset=value.committed_offset,
            metadata=value.metadata,
            commit_timestamp=value.commit_timestamp,
            expire_timestamp=value.expire_timestamp,
        )
    assert decoded == value


members = st.builds(
    MemberMetadataValue,
    member_id=st.text(max_size=20),
    group_instance_id=st.none() | st.text(max_size=10),
    client_id=st.text(max_size=10),
    client_host=st.text(max_size=10),
    rebalance_timeout=st.integers(0, 2**31 - 1),
    session_timeout=st.integers(0, 2**31 - 1),
    subscription=st.binary(max_size=40),
    assignment=st.binary(max_size=40),
)
group_values = st.builds(
    GroupMetadataValue,
    protocol_type=st.text(max_size=10),
    generation=st.integers(0, 2**31 - 1),
    protocol=st.none() | st.text(max_size=10),
    leader=st.none() | st.text(max_size=10),
    current_state_timestamp=st.integers(-1, 2**62),
    members=st.lists(members, max_size=4).map(tuple),
)


@given(st.text(max_size=30), group_values)
def test_group_metadata_round_trip(group: str, value: GroupMetadataValue) -> None:
    rec = group_metadata_record(group, value, timestamp=0)
    assert rec.key is not None and rec.key[:2] == b"\x00\x02"
    assert parse_record(rec) == (GroupMetadataKey(group=group), value)


def test_group_tombstone() -> None:
    assert parse_record(group_metadata_record("g", None, timestamp=0)) == (
        GroupMetadataKey(group="g"),
        None,
    )


def _s(x: str) -> bytes:
    return struct.pack(">h", len(x)) + x.encode()


def _cs(x: str) -> bytes:  # compact string, for the flexible v4
    return bytes([len(x) + 1]) + x.encode()


def test_reads_group_metadata_v0() -> None:
    value = (
        struct.pack(">h", 0)
        + _s("consumer")
        + struct.pack(">i", 4)
        + _s("range")
        + _s("m1")
        + struct.pack(">i", 1)
        + _s("m1")
        + _s("cid")
        + _s("/h")
        + struct.pack(">i", 10_000)
        + struct.pack(">i", 3)
        + b"sub"
        + struct.pack(">i", 2)
        + b"as"
    )
    key, decoded = parse_record(Record(key=b"\x00\x02" + _s("g"), value=value))
    assert decoded == GroupMetadataValue(
        protocol_type="consumer",
        generation=4,
        protocol="range",
        leader="m1",
        members=(
            MemberMetadataValue(
                member_id="m1",
                client_id="cid",
                client_host="/h",
                rebalance_timeout=10_000,
                session_timeout=10_000,
                subscription=b"sub",
                assignment=b"as",
            ),
        ),
    )


def test_reads_flexible_group_metadata_v4_and_offset_v4() -> None:
    member = (
        _cs("m1")
        + b"\x00"
        + _cs("cid")
        + _cs("/h")
        + struct.pack(">ii", 5, 6)
        + b"\x02x\x02y"
        + b"\x00"
    )
    value = (
        struct.pack(">h", 4)
        + _cs("consumer")
        + struct.pack(">i", 1)
        + _cs("range")
        + b"\x00"
        + struct.pack(">q", 77)
        + b"\x02"
        + member
        + b"\x01\x05\x02zz"  # one unknown tagged field
    )
    _, decoded = parse_record(Record(key=b"\x00\x02" + _s("g"), value=value))
    assert decoded == GroupMetadataValue(
        protocol_type="consumer",
        generation=1,
        protocol="range",
        leader=None,
        current_state_timestamp=77,
        members=(
            MemberMetadataValue(
                member_id="m1",
                client_id="cid",
                client_host="/h",
                rebalance_timeout=5,
                session_timeout=6,
                subscription=b"x",
                assignment=b"y",
            ),
        ),
    )
    offset_v4 = struct.pack(">hqi", 4, 12, 3) + _cs("meta") + struct.pack(">q", 99) + b"\x00"
    key = b"\x00\x00" + _s("g") + _s("t") + struct.pack(">i", 1)
    assert parse_record(Record(key=key, value=offset_v4)) == (
        OffsetCommitKey(group="g", topic="t", partition=1),
        OffsetAndMetadata(
            committed_offset=12, committed_leader_epoch=3, metadata="meta", commit_timestamp=99
        ),
    )


def test_reads_offset_commit_v0_and_v1() -> None:
    key = b"\x00\x01" + _s("g") + _s("t") + struct.pack(">i", 0)
    v0 = struct.pack(">hq", 0, 5) + _s("") + struct.pack(">q", 1)
    v1 = struct.pack(">hq", 1, 5) + _s("") + struct.pack(">qq", 1, 2)
    assert parse_record(Record(key=key, value=v0))[1] == OffsetAndMetadata(
        committed_offset=5, commit_timestamp=1
    )
    assert parse_record(Record(key=key, value=v1))[1] == OffsetAndMetadata(
        committed_offset=5, commit_timestamp=1, expire_timestamp=2
    )


def test_records_survive_a_batch() -> None:
    value = OffsetAndMetadata(committed_offset=3, commit_timestamp=5)
    recs = [
        offset_commit_record("g", TopicPartition("t", 0), value, timestamp=5),
        group_metadata_record(
            "g", GroupMetadataValue(protocol_type="consumer", generation=1), timestamp=5
        ),
    ]
    batch = build_batch(recs, producer_id=9, producer_epoch=0, transactional=True)
    [(header, decoded)] = list(read_records(bytes(batch)))
    assert header.producer_id == 9
    assert [parse_record(r)[0] for r in decoded] == [
        OffsetCommitKey(group="g", topic="t", partition=0),
        GroupMetadataKey(group="g"),
    ]


@pytest.mark.parametrize("key", [None, b"\x00\x05abc", b"\x00", b"\x00\x01\x00\x09g"])
def test_bad_keys_raise_value_error(key: bytes | None) -> None:
    with pytest.raises(ValueError):
        parse_record(Record(key=key, value=b""))


@given(st.binary(max_size=64), st.binary(max_size=64) | st.none())
def test_garbage_only_raises_value_error(key: bytes, value: bytes | None) -> None:
    try:
        parse_record(Record(key=key, value=value))
    except ValueError:
        pass
