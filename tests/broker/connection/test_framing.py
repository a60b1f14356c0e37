"""broker/connection/framing.py in memory: frames out of bytes however they are split, the
frame-size bound, and reads paused under back-pressure and resumed."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import struct

from broker.config import BrokerConfig
from broker.connection.framing import MAX_QUEUED_FRAMES, FrameReader
from broker.memory_pool import MemoryPool
from protocol.frames import LARGE_FRAME
from tests.broker.connection.fake_transport import FakeTransport, feed


@dataclasses.dataclass
class State:
    config: BrokerConfig


class Closes:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def __call__(self, reason: str, level: int = logging.WARNING, abort: bool = False) -> None:
        self.reasons.append(reason)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def reader(pool: MemoryPool | None = None, **config: int) -> tuple[FrameReader, FakeTransport, Closes]:
    closes = Closes()
    frames = FrameReader(State(dataclasses.replace(BrokerConfig(), **config)), pool or MemoryPool(-1), closes)
    transport = FakeTransport()
    frames.start(transport)
    return frames, transport, closes


def receive(frames: FrameReader, data: bytes, chunk: int = 1 << 16) -> None:
    feed(lambda hint: frames.get_buffer(), frames.buffer_updated, data, chunk)


async def test_frames_split_across_reads_come_out_whole() -> None:
    frames, _, closes = reader()
    small, large = b"\x00\x12" + b"a" * 98, b"\x00\x03" + bytes(range(256)) * (LARGE_FRAME // 128)
    receive(frames, framed(small) + framed(large) + framed(small)[:3], chunk=1)
    assert [bytes(frames.take() or b"") for _ in range(2)] == [small, large]
    assert frames.take() is None  # the third has only 3 bytes in
    receive(frames, framed(small)[3:], chunk=7)
    assert frames.take() == small
    assert closes.reasons == []


async def test_an_oversized_frame_closes_with_the_limit_named() -> None:
    frames, _, closes = reader(socket_request_max_bytes=100)
    receive(frames, framed(b"\x00\x12" + b"x" * 99))
    assert closes.reasons == ["frame of 101 bytes exceeds socket.request.max.bytes=100"]
    assert frames.take() is None


async def test_a_foreign_protocol_is_closed_before_any_frame() -> None:
    frames, _, closes = reader()
    receive(frames, b"GET / HTTP/1.1\r\n\r\n")
    assert len(closes.reasons) == 1 and closes.reasons[0].startswith("looks like")


async def test_pipelined_frames_pause_reading_until_half_the_queue_is_taken() -> None:
    frames, transport, _ = reader()
    receive(frames, framed(b"\x00\x12abc") * (MAX_QUEUED_FRAMES - 1))
    assert transport.reading
    receive(frames, framed(b"\x00\x12abc"))
    assert not transport.reading and frames.paused_for == {"queue"}
    for _ in range(MAX_QUEUED_FRAMES // 2):
        frames.take()
    assert not transport.reading  # 8 still wait
    frames.take()
    assert transport.reading and not frames.paused_for


async def test_reading_pauses_while_the_memory_pool_cannot_cover_the_frame() -> None:
    pool = MemoryPool(1000)
    assert pool.try_reserve(600)  # another connection's request
    frames, transport, _ = reader(pool)
    whole = framed(b"\x00\x12" + b"m" * 498)
    receive(frames, whole[:10])  # the size prefix announces 500 bytes: 504 more than the pool has
    assert not transport.reading and frames.paused_for == {"memory"}
    pool.release(600)
    assert transport.reading and pool.reserved == 504
    receive(frames, whole[10:])
    frame = frames.take()
    assert frame is not None and len(frame) == 500
    del frame
    frames.request_done()
    assert pool.reserved == 0


async def test_pause_reasons_stack_and_reading_resumes_when_none_is_left() -> None:
    frames, transport, _ = reader()
    frames.pause("quota")
    frames.pause("creation rate")
    frames.resume("quota")
    assert not transport.reading
    frames.resume("quota")  # a reason lifted twice changes nothing
    assert not transport.reading
    frames.resume("creation rate")
    assert transport.reading


async def test_a_lost_connection_gives_its_memory_back_and_wakes_the_loop() -> None:
    pool = MemoryPool(-1)
    frames, _, _ = reader(pool)
    receive(frames, framed(b"\x00\x12abc") + framed(b"\x00\x12" + b"x" * 100)[:20])
    assert pool.reserved > 0
    waiting = asyncio.ensure_future(frames.wait_for_frame())
    await asyncio.sleep(0)
    frames.lost()
    await waiting  # the request loop wakes to see the connection closing
    assert pool.reserved == 0 and frames.closing and frames.take() is None
