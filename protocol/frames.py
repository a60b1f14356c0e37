"""Length-prefixed Kafka frames, sans-I/O in the manner of h11: feed bytes, pull frames."""

from __future__ import annotations

import struct
from typing import Final

__all__ = ("NEED_DATA", "FrameDecoder", "FrameTooLarge", "encode_frame", "sniff_foreign_protocol")

_SIZE: Final = struct.Struct(">i")


class _NeedData:
    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA: Final = _NeedData()


class FrameTooLarge(Exception):
    """A frame announced a size over socket.request.max.bytes (or a negative one)."""


class FrameDecoder:
    """Buffers received bytes and yields complete frames (the bytes after the 4-byte size)."""

    def __init__(self, max_frame_bytes: int, limit_name: str = "socket.request.max.bytes") -> None:
        self._max = max_frame_bytes
        self._limit_name = limit_name
        self._buf = bytearray()
        self._pos = 0

    def set_limit(self, max_frame_bytes: int, limit_name: str) -> None:
        """Another bound from now on (a SASL listener bounds frames tighter until authenticated)."""
        self._max, self._limit_name = max_frame_bytes, limit_name

    def receive_data(self, data: bytes) -> None:
        if self._pos and self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        self._buf += data

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._pos

    @property
    def pending(self) -> int:
        """Bytes the frame being received will occupy once complete: its announced size plus the
        prefix, or what has arrived while the prefix is incomplete; 0 between frames."""
        if self.buffered < 4:
            return self.buffered
        (size,) = _SIZE.unpack_from(self._buf, self._pos)
        return 4 + size if 0 <= size <= self._max else self.buffered

    def head(self, n: int) -> bytes:
        """The first n buffered bytes (fewer if fewer arrived), to sniff what the peer speaks."""
        return bytes(self._buf[self._pos : self._pos + n])

    def clear(self) -> None:
        """Drop everything buffered and release the buffer's memory (a closed connection)."""
        self._buf = bytearray()
        self._pos = 0

    def next_frame(self) -> bytes | _NeedData:
        """One frame, NEED_DATA, or FrameTooLarge when the size prefix is out of bounds."""
        if self.buffered < 4:
            return NEED_DATA
        (size,) = _SIZE.unpack_from(self._buf, self._pos)
        if size < 0 or size > self._max:
            raise FrameTooLarge(f"frame of {size} bytes exceeds {self._limit_name}={self._max}")
        start = self._pos + 4
        end = start + size
        if end > len(self._buf):
            return NEED_DATA
        # One copy out of the receive buffer so that the buffer can be reused (through a
        # memoryview: slicing the bytearray itself would copy twice).
        with memoryview(self._buf) as view:
            frame = bytes(view[start:end])
        self._pos = end
        if self._pos > 1 << 20:
            del self._buf[: self._pos]
            self._pos = 0
        return frame


def encode_frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


# First bytes of protocols that clients mistakenly send to a Kafka PLAINTEXT port. Read as a Kafka
# size prefix they announce hundreds of MiB, so without this the peer would only see a frame-size
# error. TLS: a handshake record (0x16) of version 3.x; HTTP: a request method.
_FOREIGN: Final = (
    (b"\x16\x03", "a TLS ClientHello on a PLAINTEXT listener (is the client using security.protocol=SSL?)"),
    *((method, "an HTTP request on a Kafka listener") for method in (b"GET ", b"POST", b"PUT ", b"HEAD")),
)


def sniff_foreign_protocol(head: bytes) -> str | None:
    """What the first bytes of a connection look like when they are not Kafka, else None."""
    for prefix, what in _FOREIGN:
        if head.startswith(prefix):
            return what
    return None
