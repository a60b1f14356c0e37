"""FrameDecoder: bytes in, whole frames out, bounded by socket.request.max.bytes."""

import mmap
import struct
import tracemalloc
import weakref

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.frames import NEED_DATA, FrameDecoder, FrameTooLarge, encode_frame, sniff_foreign_protocol


def drain(decoder: FrameDecoder) -> list[bytes]:
    frames = []
    while (f := decoder.next_frame()) is not NEED_DATA:
        frames.append(f)
    return frames


def test_empty_decoder_needs_data():
    assert FrameDecoder(100).next_frame() is NEED_DATA


def test_frame_split_at_every_byte_arrives_once_whole():
    payload = b"hello kafka"
    data = encode_frame(payload)
    for cut in range(len(data) + 1):
        d = FrameDecoder(100)
        d.receive_data(data[:cut])
        first = drain(d)
        d.receive_data(data[cut:])
        assert first + drain(d) == [payload], cut


def test_merged_frames_come_out_in_order():
    payloads = [b"a", b"", b"ccc" * 50, b"dd"]
    d = FrameDecoder(1000)
    d.receive_data(b"".join(encode_frame(p) for p in payloads) + b"\x00\x00")
    assert drain(d) == payloads
    assert d.buffered == 2  # the start of a fifth size prefix waits for more


def test_frame_at_the_limit_is_accepted_and_one_byte_over_is_refused():
    d = FrameDecoder(8)
    d.receive_data(encode_frame(b"x" * 8))
    assert drain(d) == [b"x" * 8]
    d.receive_data(struct.pack(">i", 9))
    with pytest.raises(FrameTooLarge):
        d.next_frame()


def test_oversize_is_refused_from_the_prefix_alone():
    d = FrameDecoder(1024)
    d.receive_data(struct.pack(">i", 1 << 30))  # no body sent: refusing must not wait for it
    with pytest.raises(FrameTooLarge):
        d.next_frame()


def test_negative_size_is_refused():
    d = FrameDecoder(1024)
    d.receive_data(struct.pack(">i", -1) + b"junk")
    with pytest.raises(FrameTooLarge):
        d.next_frame()


def test_buffer_is_reused_across_many_frames():
    d = FrameDecoder(1 << 21)
    big = b"y" * (1 << 20)
    for _ in range(3):
        d.receive_data(encode_frame(big) + encode_frame(b"z"))
        assert drain(d) == [big, b"z"]
    assert d.buffered == 0


@given(st.lists(st.binary(max_size=300), max_size=20), st.lists(st.integers(0, 400), max_size=30))
def test_any_chunking_yields_the_frames_sent(payloads, cuts):
    data = b"".join(encode_frame(p) for p in payloads)
    bounds = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    d = FrameDecoder(300)
    got = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        d.receive_data(data[start:end])
        got += drain(d)
    assert got == payloads
    assert d.buffered == 0


@given(st.binary(max_size=2000))
def test_arbitrary_bytes_give_frames_need_data_or_frame_too_large(data):
    d = FrameDecoder(256)
    d.receive_data(data)
    try:
        for f in drain(d):
            assert len(f) <= 256
    except FrameTooLarge:
        pass


def test_pending_is_the_announced_frame_once_the_prefix_is_in():
    d = FrameDecoder(1000)
    assert d.pending == 0
    d.receive_data(b"\x00\x00")
    assert d.pending == 2  # the prefix is not whole yet: what arrived
    d.receive_data(b"\x01\x00" + b"x" * 10)
    assert d.pending == 4 + 256
    d.receive_data(b"x" * 246)
    assert drain(d) == [b"x" * 256]
    assert d.pending == 0


def test_clear_drops_what_was_buffered():
    d = FrameDecoder(1 << 20)
    d.receive_data(encode_frame(b"y" * 1000)[:500])
    d.clear()
    assert d.buffered == 0 and d.pending == 0
    d.receive_data(encode_frame(b"z"))
    assert drain(d) == [b"z"]


@pytest.mark.parametrize(("head", "what"), [
    (b"\x16\x03\x01\x02", "TLS ClientHello"),
    (b"GET /", "HTTP request"),
    (b"POST", "HTTP request"),
])
def test_foreign_protocols_are_named(head, what):
    found = sniff_foreign_protocol(head)
    assert found is not None and what in found


def test_a_kafka_size_prefix_is_not_foreign():
    assert sniff_foreign_protocol(struct.pack(">i", 100)) is None
    assert sniff_foreign_protocol(struct.pack(">i", 0x16000000)) is None  # 0x16 without TLS's 0x03


# -- the buffer-providing side (asyncio.BufferedProtocol) ------------------------------------------


def feed(decoder: FrameDecoder, data: bytes, most: int = 1 << 30) -> list[bytes | memoryview]:
    """Receive data as a transport would: at most `most` bytes into each get_buffer()."""
    got: list[bytes | memoryview] = []
    view = memoryview(data)
    while view:
        buf = decoder.get_buffer()
        assert len(buf) > 0
        n = min(len(buf), len(view), most)
        buf[:n] = view[:n]
        del buf
        decoder.buffer_updated(n)
        view = view[n:]
        got += drain(decoder)
    return got


def test_a_large_frame_is_received_into_its_own_buffer_and_not_copied():
    d = FrameDecoder(1 << 20, large_frame=100)
    payload = bytes(range(256)) * 4
    data = encode_frame(payload)
    assert feed(d, data[:50]) == []
    buf = d.get_buffer()
    assert len(buf) == len(payload) - 46  # exactly the rest of the frame: the kernel writes it there
    buf[:] = data[50:]
    del buf
    d.buffer_updated(len(payload) - 46)
    frame = d.next_frame()
    assert isinstance(frame, memoryview) and frame.readonly and frame == payload
    assert d.buffered == 0 and d.pending == 0


def test_small_frames_share_the_scratch_buffer_and_come_out_as_bytes():
    d = FrameDecoder(1 << 20, large_frame=100)
    data = b"".join(encode_frame(bytes([i]) * 60) for i in range(10))
    frames = feed(d, data)
    assert frames == [bytes([i]) * 60 for i in range(10)]
    assert all(type(f) is bytes for f in frames)


def test_the_buffer_for_an_announced_frame_is_not_allocated_before_get_buffer():
    d = FrameDecoder(1 << 30)
    buf = d.get_buffer()
    buf[:4] = struct.pack(">i", 1 << 29)
    del buf
    tracemalloc.start()
    try:
        d.buffer_updated(4)
        assert d.next_frame() is NEED_DATA
        assert d.pending == 4 + (1 << 29)
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()


def test_head_is_the_first_bytes_the_peer_sent():
    d = FrameDecoder(100, large_frame=8)
    feed(d, encode_frame(b"ab") + encode_frame(b"c" * 50), most=3)
    assert d.head(4) == b"\x00\x00\x00\x02"


@given(st.lists(st.binary(max_size=90), max_size=20), st.integers(1, 200), st.integers(4, 40))
def test_any_read_sizes_yield_the_frames_sent(payloads, most, large):
    d = FrameDecoder(90, large_frame=large)
    assert feed(d, b"".join(encode_frame(p) for p in payloads), most) == payloads
    assert d.buffered == 0 and d.pending == 0


@given(st.binary(max_size=500), st.integers(1, 64))
def test_arbitrary_bytes_read_in_any_sizes_never_overrun(data, most):
    d = FrameDecoder(64, large_frame=16)
    try:
        for f in feed(d, data, most):
            assert len(f) <= 64
    except FrameTooLarge:
        pass


def test_a_drained_decoder_holds_no_buffer():
    tracemalloc.start()
    try:
        d = FrameDecoder(1 << 20)
        assert feed(d, encode_frame(b"z" * 100)) == [b"z" * 100]
        assert tracemalloc.get_traced_memory()[0] < 4096  # an idle connection's decoder: no scratch kept
    finally:
        tracemalloc.stop()


def test_a_very_large_frame_gets_a_mapping_of_its_own_that_goes_with_its_last_reference():
    d = FrameDecoder(1 << 20, large_frame=100, mapped_frame=1000)
    payload = bytes(range(256)) * 8
    frames = feed(d, encode_frame(payload) + encode_frame(b"y" * 500))
    assert frames == [payload, b"y" * 500]
    mapped, heap = frames
    assert isinstance(mapped, memoryview) and isinstance(mapped.obj, mmap.mmap) and mapped.readonly
    assert isinstance(heap, memoryview) and isinstance(heap.obj, bytearray)  # under mapped_frame
    gone = weakref.ref(mapped.obj)
    del frames, mapped
    assert gone() is None  # unmapped as soon as nothing refers to the frame


def test_clear_drops_a_mapping_half_received():
    d = FrameDecoder(1 << 20, large_frame=100, mapped_frame=1000)
    feed(d, encode_frame(b"x" * 5000)[:3000])
    buf = d.get_buffer()
    gone = weakref.ref(buf.obj)
    del buf
    assert isinstance(gone(), mmap.mmap)
    d.clear()
    assert gone() is None and d.buffered == 0
