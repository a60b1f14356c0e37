"""Length-prefixed Kafka frames, sans-I/O in the manner of h11: feed bytes, pull frames."""

from __future__ import annotations

import struct
from typing import Final

__all__ = ("NEED_DATA", "FrameDecoder", "FrameTooLarge", "encode_frame")

_SIZE: Final = struct.Struct(">i")


class _NeedData:
    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA: Final = _NeedData()


class FrameTooLarge(Exception):
    """A frame announced a size over socket.request.max.bytes (or a negative one)."""


class FrameDecoder:
    """Buffers received bytes and yields complete frames (the bytes after the 4-byte size)."""

    def __init__(self, max_frame_bytes: int) -> None:
        self._max = max_frame_bytes
        self._buf = bytearray()
        self._pos = 0

    def receive_data(self, data: bytes) -> None:
        if self._pos and self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        self._buf += data

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._pos

    def next_frame(self) -> bytes | _NeedData:
        """One frame, NEED_DATA, or FrameTooLarge when the size prefix is out of bounds."""
        if self.buffered < 4:
            return NEED_DATA
        (size,) = _SIZE.unpack_from(self._buf, self._pos)
        if size < 0 or size > self._max:
            raise FrameTooLarge(f"frame of {size} bytes exceeds socket.request.max.bytes={self._max}")
        start = self._pos + 4
        end = start + size
        if end > len(self._buf):
            return NEED_DATA
        # One copy out of the receive buffer so that the buffer can be reused.
        frame = bytes(self._buf[start:end])
        self._pos = end
        if self._pos > 1 << 20:
            del self._buf[: self._pos]
            self._pos = 0
        return frame


def encode_frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload
