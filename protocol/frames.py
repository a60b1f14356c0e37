"""Length-prefixed Kafka frames, sans-I/O in the manner of h11: feed bytes, pull frames."""

from __future__ import annotations

import mmap
import struct
from collections import deque
from typing import Final

__all__ = ("LARGE_FRAME", "NEED_DATA", "FrameDecoder", "FrameTooLarge", "encode_frame", "sniff_foreign_protocol")

_SIZE: Final = struct.Struct(">i")
# Frames up to this size share a scratch buffer of twice the size and are copied out of it; a
# bigger one is received into a buffer of its own (a copy saved, two reads instead of one).
LARGE_FRAME: Final = 32 << 10
# A frame at least this big gets an anonymous mapping of its own instead of malloc'd memory: freeing
# it unmaps it, so the memory goes back to the system at once. From malloc, a freed buffer of tens
# of MiB often stays in the process (glibc raises its mmap threshold up to 32 MiB after such a free
# and then serves them from the heap, which returns memory only from its top). Smaller frames keep
# malloc, which reuses memory already faulted in; a fresh mapping costs a page fault per 4 KiB.
MAPPED_FRAME: Final = 8 << 20


class _NeedData:
    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA: Final = _NeedData()


class FrameTooLarge(Exception):
    """A frame announced a size over socket.request.max.bytes (or a negative one)."""


class FrameDecoder:
    """Received bytes in, complete frames (the bytes after the 4-byte size) out.

    Shaped for asyncio.BufferedProtocol: get_buffer() says where the next received bytes go and
    buffer_updated(n) says how many came, so the kernel writes straight into the decoder's memory.
    Frames up to `large_frame` bytes arrive in a scratch buffer of twice that size (64 KiB by
    default, held while a frame is partly in) that many of them share, one read bringing several,
    and each is copied out once as bytes. A bigger frame gets a buffer of its own once its size is
    known, the kernel writes the rest of it there, and it is handed out as a read-only memoryview
    of that buffer, not copied. That buffer is allocated in get_buffer, i.e. once the caller reads
    on (after reserving the memory), never when a size prefix merely announces it.
    """

    def __init__(self, max_frame_bytes: int, limit_name: str = "socket.request.max.bytes",
                 large_frame: int = LARGE_FRAME, mapped_frame: int = MAPPED_FRAME) -> None:
        self._max = max_frame_bytes
        self._large = large_frame
        self._mapped = mapped_frame
        self._limit_name = limit_name
        self._scratch = bytearray()
        self._pos = 0  # start of the partial frame in _scratch
        self._end = 0  # end of the bytes received into _scratch
        self._frame: bytearray | mmap.mmap | None = None  # a large frame's own buffer, while it arrives
        self._filled = 0  # bytes of _frame received
        self._ready: deque[bytes | memoryview] = deque()
        self._error: FrameTooLarge | None = None
        self._head = b""

    def set_limit(self, max_frame_bytes: int, limit_name: str) -> None:
        """Another bound from now on (a SASL listener bounds frames tighter until authenticated)."""
        self._max, self._limit_name = max_frame_bytes, limit_name

    def receive_data(self, data: bytes) -> None:
        """Bytes that arrived elsewhere (tests, non-buffered transports): copied in."""
        view = memoryview(data)
        while view:
            buf = self.get_buffer()
            n = min(len(buf), len(view))
            buf[:n] = view[:n]
            del buf
            self.buffer_updated(n)
            view = view[n:]

    def get_buffer(self) -> memoryview:
        """Where the next received bytes go (never empty)."""
        if self._frame is not None:
            return memoryview(self._frame)[self._filled:]
        size = self._announced()
        if size is not None and size > self._large:
            return self._own_buffer(size)
        if not self._scratch:
            self._scratch = bytearray(2 * self._large)
        if self._error is not None:
            self._pos = self._end = 0  # the caller closes; what follows is not kept
        elif self._end == len(self._scratch) or (size is not None and self._pos + 4 + size > len(self._scratch)):
            # Move the partial frame to the front: a frame up to the large size then fits.
            n = self._end - self._pos
            self._scratch[:n] = self._scratch[self._pos : self._end]
            self._pos, self._end = 0, n
        return memoryview(self._scratch)[self._end:]

    def _own_buffer(self, size: int) -> memoryview:
        self._frame = mmap.mmap(-1, size) if size >= self._mapped else bytearray(size)
        got = self._end - self._pos - 4
        with memoryview(self._scratch) as view:
            self._frame[:got] = view[self._pos + 4 : self._end]
        self._filled = got
        self._pos = self._end = 0
        return memoryview(self._frame)[got:]

    def buffer_updated(self, nbytes: int) -> None:
        """nbytes were written at the start of the last get_buffer()."""
        if len(self._head) < 4:
            start = self._filled if self._frame is not None else self._end
            source = self._frame if self._frame is not None else self._scratch
            self._head += bytes(source[start : start + min(nbytes, 4 - len(self._head))])
        if self._frame is not None:
            self._filled += nbytes
            if self._filled == len(self._frame):
                self._ready.append(memoryview(self._frame).toreadonly())
                self._frame = None
            return
        self._end += nbytes
        self._split()

    def _split(self) -> None:
        """Copy the complete frames out of the scratch buffer; a partial one stays at _pos."""
        scratch = self._scratch
        while self._error is None and (size := self._announced()) is not None:
            start = self._pos + 4
            if start + size > self._end:
                return
            # Through a memoryview: slicing the bytearray itself would copy twice.
            with memoryview(scratch) as view:
                self._ready.append(bytes(view[start : start + size]))
            self._pos = start + size
        if self._pos == self._end:
            # Nothing partial: let the scratch buffer go, so that an idle connection holds no
            # memory (thousands of them would hold 64 KiB each); the next read allocates anew.
            self._pos = self._end = 0
            self._scratch = bytearray()

    def _announced(self) -> int | None:
        """The size of the frame at _pos once its prefix is in and within bounds, else None
        (setting _error when it is out of bounds)."""
        if self._end - self._pos < 4 or self._error is not None:
            return None
        (size,) = _SIZE.unpack_from(self._scratch, self._pos)
        if size < 0 or size > self._max:
            self._error = FrameTooLarge(f"frame of {size} bytes exceeds {self._limit_name}={self._max}")
            return None
        return int(size)

    @property
    def buffered(self) -> int:
        """Bytes of the frame being received that have arrived (with its prefix)."""
        return 4 + self._filled if self._frame is not None else self._end - self._pos

    @property
    def pending(self) -> int:
        """Bytes the frame being received will occupy once complete: its announced size plus the
        prefix, or what has arrived while the prefix is incomplete; 0 between frames."""
        if self._frame is not None:
            return 4 + len(self._frame)
        if self._end - self._pos < 4:
            return self._end - self._pos
        (size,) = _SIZE.unpack_from(self._scratch, self._pos)
        return 4 + size if 0 <= size <= self._max else self._end - self._pos

    def head(self, n: int) -> bytes:
        """The first n bytes the peer sent (fewer if fewer arrived), to sniff what it speaks."""
        return self._head[:n]

    def clear(self) -> None:
        """Drop everything buffered and release the buffers' memory (a closed connection)."""
        self._scratch = bytearray()
        self._pos = self._end = self._filled = 0
        self._frame = None
        self._ready.clear()

    def next_frame(self) -> bytes | memoryview | _NeedData:
        """One frame, NEED_DATA, or FrameTooLarge when a size prefix is out of bounds."""
        if self._ready:
            return self._ready.popleft()
        if self._error is not None:
            raise self._error
        return NEED_DATA


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
