"""FrameDecoder: bytes in, whole frames out, bounded by socket.request.max.bytes."""

import struct

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
