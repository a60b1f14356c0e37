"""A transport with no socket, for driving a connection in memory (h11's ConnectionPair does the same
for an HTTP connection): what the protocol writes is kept, pausing is recorded, and a close reports
the connection lost on the next turn of the loop, as asyncio's transports do."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable
from typing import Any

from tests.kafka_wire import decode_response


class FakeTransport(asyncio.Transport):
    def __init__(self, protocol: asyncio.BaseProtocol | None = None,
                 peer: tuple[str, int] = ("127.0.0.1", 5555)) -> None:
        super().__init__()
        self.protocol = protocol
        self.peer = peer
        self.written = bytearray()
        self.writes = 0  # write or writelines calls: how many sends reached the socket
        self.reading = True
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.peer if name == "peername" else default

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def write(self, data: bytes | bytearray | memoryview) -> None:  # type: ignore[override]
        assert not self.closed, "write after close"
        self.written += data
        self.writes += 1

    def writelines(self, list_of_data: Any) -> None:
        assert not self.closed, "write after close"
        for data in list_of_data:
            self.written += data
        self.writes += 1

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_reading(self) -> bool:
        return self.reading

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if isinstance(self.protocol, asyncio.BaseProtocol):
                asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def frames(self) -> list[bytes]:
        """The size-prefixed frames written so far, without their prefixes."""
        out, data, at = [], bytes(self.written), 0
        while at + 4 <= len(data):
            (size,) = struct.unpack_from(">i", data, at)
            out.append(data[at + 4 : at + 4 + size])
            at += 4 + size
        return out

    def response(self, index: int, api_key: int, version: int) -> Any:
        """The body of the index-th response written, of that API and version."""
        return decode_response(self.frames()[index], api_key, version)[1]


def feed(get_buffer: Callable[[int], memoryview], buffer_updated: Callable[[int], None], data: bytes,
         chunk: int = 1 << 16) -> None:
    """Hand data to a BufferedProtocol as the event loop would, at most `chunk` bytes per read."""
    at = 0
    while at < len(data):
        buf = get_buffer(-1)
        n = min(len(buf), chunk, len(data) - at)
        buf[:n] = data[at : at + n]
        del buf
        buffer_updated(n)
        at += n


async def until(condition: Callable[[], bool], what: str, turns: int = 10_000) -> None:
    """Run the loop until condition holds (no clock: a bounded number of turns, sleeping a little
    once the loop has nothing ready, for timers such as a throttle's)."""
    for turn in range(turns):
        if condition():
            return
        await asyncio.sleep(0 if turn < 100 else 0.01)
    raise AssertionError(f"never happened: {what}")
