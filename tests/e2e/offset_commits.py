"""Many offset commits fast: one OffsetCommit request encoded once by kio, then sent pipelined
with only its correlation id and committed offset patched (a client library would send the same
bytes one at a time, much more slowly)."""

from __future__ import annotations

import socket
import struct

from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.static.primitive import i32, i64

from tests.kafka_wire import encode_request, frame, recv_frame

_SENTINEL = 0x0123456789ABCDEF
_CORRELATION_AT = 4 + 2 + 2  # size prefix, api key, api version


def _template(group: str, topic: str, partitions: int) -> tuple[bytes, list[int]]:
    request = OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=i32(-1), member_id="", group_instance_id=None,
        topics=(OffsetCommitRequestTopic(name=topic, partitions=tuple(OffsetCommitRequestPartition(
            partition_index=i32(p), committed_offset=i64(_SENTINEL), committed_leader_epoch=i32(-1),
            committed_metadata="") for p in range(partitions))),),
    )
    data = frame(encode_request(request, 0))
    marker = struct.pack(">q", _SENTINEL)
    spots, at = [], data.find(marker)
    while at >= 0:
        spots.append(at)
        at = data.find(marker, at + 1)
    assert len(spots) == partitions
    return data, spots


def commit_many(bootstrap: str, group: str, topic: str, partitions: int, commits: int, window: int = 256,
                first_offset: int = 0) -> None:
    """commits OffsetCommit requests, each of every partition with offsets first_offset, +1, ...; at
    most window in flight."""
    template, spots = _template(group, topic, partitions)
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sent = received = 0
        while received < commits:
            burst = []
            while sent < commits and sent - received < window:
                data = bytearray(template)
                struct.pack_into(">i", data, _CORRELATION_AT, sent)
                for spot in spots:
                    struct.pack_into(">q", data, spot, first_offset + sent)
                burst.append(bytes(data))
                sent += 1
            sock.sendall(b"".join(burst))
            while received < sent:
                response = recv_frame(sock)
                (correlation,) = struct.unpack_from(">i", response, 0)
                assert correlation == received
                received += 1
