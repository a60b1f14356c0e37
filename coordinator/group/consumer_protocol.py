"""The bytes classic consumers embed in JoinGroup and SyncGroup: Kafka's ConsumerProtocolSubscription
and ConsumerProtocolAssignment (clients/.../consumer/internals/ConsumerProtocol, versions 0-3).

The coordinator only reads them when a group changes protocol (KIP-848 migration) or a classic
member lives in a consumer group: the subscription gives the topics, the owned partitions and the
rack; the assignment is what the server-side assignor decided, written back in the member's own
version. Layouts (not flexible; strings int16-length, arrays int32-counted, bytes int32-length
with -1 for null):
  Subscription v0 Topics [string], UserData bytes?; v1+ OwnedPartitions [Topic string,
      Partitions [int32]]; v2+ GenerationId int32; v3+ RackId string?
  Assignment v0+ AssignedPartitions [Topic string, Partitions [int32]], UserData bytes?
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ("ConsumerSubscription", "decode_assignment", "decode_subscription", "encode_assignment",
           "protocol_version")

_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")
# topic name -> partitions
NamedPartitions = Mapping[str, frozenset[int]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerSubscription:
    version: int
    topics: tuple[str, ...]
    owned: dict[str, frozenset[int]] = field(default_factory=dict)
    rack_id: str | None = None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def fixed(self, s: struct.Struct) -> int:
        (v,) = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return int(v)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("field runs past the end of the embedded consumer protocol")
        out, self.pos = self.data[self.pos:self.pos + n], self.pos + n
        return out

    def string(self) -> str | None:
        n = self.fixed(_I16)
        return None if n < 0 else self.take(n).decode()

    def skip_bytes(self) -> None:
        n = self.fixed(_I32)
        if n >= 0:
            self.take(n)

    def done(self) -> bool:
        return self.pos >= len(self.data)

    def partitions(self) -> dict[str, frozenset[int]]:
        out: dict[str, frozenset[int]] = {}
        for _ in range(self.fixed(_I32)):
            topic = self.string() or ""
            out[topic] = out.get(topic, frozenset()) | {self.fixed(_I32) for _ in range(self.fixed(_I32))}
        return out


def protocol_version(data: bytes) -> int:
    """Kafka's ConsumerProtocol.deserializeVersion: the leading int16 (0 if it is missing)."""
    return _I16.unpack_from(data, 0)[0] if len(data) >= 2 else 0


def decode_subscription(data: bytes) -> ConsumerSubscription:
    """Raises ValueError when the bytes are not a ConsumerProtocolSubscription."""
    try:
        r = _Reader(data)
        version = r.fixed(_I16)
        topics = tuple(r.string() or "" for _ in range(r.fixed(_I32)))
        r.skip_bytes()
        owned = r.partitions() if version >= 1 and not r.done() else {}
        if version >= 2 and not r.done():
            r.fixed(_I32)
        rack = r.string() if version >= 3 and not r.done() else None
    except (struct.error, UnicodeDecodeError) as exc:
        raise ValueError(f"malformed consumer protocol subscription: {exc}") from None
    return ConsumerSubscription(version=version, topics=topics, owned=owned, rack_id=rack)


def decode_assignment(data: bytes) -> dict[str, frozenset[int]]:
    """The partitions of a ConsumerProtocolAssignment (empty bytes: nothing assigned)."""
    if not data:
        return {}
    try:
        r = _Reader(data)
        r.fixed(_I16)
        return r.partitions()
    except (struct.error, UnicodeDecodeError) as exc:
        raise ValueError(f"malformed consumer protocol assignment: {exc}") from None


def encode_assignment(partitions: NamedPartitions, version: int) -> bytes:
    """A ConsumerProtocolAssignment without user data; every version 0-3 has this layout."""
    out = bytearray(_I16.pack(max(0, min(version, 3))) + _I32.pack(len(partitions)))
    for topic, parts in sorted(partitions.items()):
        name = topic.encode()
        out += _I16.pack(len(name)) + name + _I32.pack(len(parts))
        for p in sorted(parts):
            out += _I32.pack(p)
    return bytes(out + _I32.pack(-1))
