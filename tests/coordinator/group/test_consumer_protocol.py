"""The ConsumerProtocol bytes classic consumers embed in JoinGroup and SyncGroup (versions 0-3)."""

from __future__ import annotations

import struct

import pytest

from coordinator.group.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    protocol_version,
)


def _s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def subscription_v3(topics: list[str], owned: dict[str, list[int]], rack: str | None) -> bytes:
    out = struct.pack(">hi", 3, len(topics)) + b"".join(_s(t) for t in topics) + struct.pack(">i", 2) + b"ud"
    out += struct.pack(">i", len(owned))
    for topic, parts in owned.items():
        out += _s(topic) + struct.pack(f">i{len(parts)}i", len(parts), *parts)
    return out + struct.pack(">i", 7) + (struct.pack(">h", -1) if rack is None else _s(rack))


def test_a_v3_subscription_gives_topics_owned_partitions_and_rack() -> None:
    sub = decode_subscription(subscription_v3(["b", "a"], {"a": [2, 0]}, "r1"))
    assert (sub.version, sub.topics, sub.owned, sub.rack_id) == (3, ("b", "a"), {"a": frozenset({0, 2})}, "r1")


def test_a_v0_subscription_has_no_owned_partitions() -> None:
    data = struct.pack(">hi", 0, 1) + _s("t") + struct.pack(">i", -1)
    sub = decode_subscription(data)
    assert (sub.version, sub.topics, sub.owned, sub.rack_id) == (0, ("t",), {}, None)
    assert protocol_version(data) == 0


@pytest.mark.parametrize("version", [0, 1, 3])
def test_assignments_round_trip_in_the_members_version(version: int) -> None:
    data = encode_assignment({"t": frozenset({3, 1}), "u": frozenset({0})}, version)
    assert protocol_version(data) == version
    assert decode_assignment(data) == {"t": frozenset({1, 3}), "u": frozenset({0})}
    assert decode_assignment(b"") == {}


def test_garbage_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        decode_subscription(b"\x00\x01\x00\x00\x00\x09\x00")
    with pytest.raises(ValueError):
        decode_assignment(b"\x00\x00\x00\x00\x00\x01\x00\x05ab")
