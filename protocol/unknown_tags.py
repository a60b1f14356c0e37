"""Unknown tagged fields in a request, skipped as Kafka skips them.

KIP-482 lets a sender add tagged fields to a flexible version without a version bump: a receiver
that does not know a tag skips its bytes. kio's native reader refuses an unknown tag instead, so
a client newer than kio's schemas (or one that sends tags of its own, as franz-go can) would have
its request refused. protocol/bounds.py's walk finds unknown tags before kio reads anything; when
it does, the frame is walked once more recording every tagged-field section, and rebuilt without
the unknown fields: each section's count is rewritten, and a known tagged field whose value held
an unknown one gets its new size. Frames without unknown tags never come here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .bounds import TaggedSection, recording
from .records import encode_uvarint

__all__ = ("strip_unknown_tags",)


def strip_unknown_tags(frame: bytes | memoryview, check: Callable[[bytes | memoryview], None]) -> bytes:
    """`frame` without its unknown tagged fields; `check` is the frame's bounds walk
    (protocol/bounds.py request_walker), which also checks the bounds of every length again."""
    sections: list[TaggedSection] = []
    recording.sections = sections
    try:
        check(frame)
    finally:
        del recording.sections
    out = bytearray()
    _rebuild(frame, 0, len(frame), sections, out)
    return bytes(out)


def _rebuild(buf: bytes | memoryview, start: int, end: int, sections: Sequence[TaggedSection],
             out: bytearray) -> None:
    """buf[start:end] into `out`, each section in it holding only its known fields."""
    pos = start
    for section in sections:
        out += buf[pos:section.start]
        out += encode_uvarint(len(section.known))
        for value in section.known:
            if not value.nested:
                out += buf[value.tag_start:value.value_end]
                continue
            inner = bytearray()
            _rebuild(buf, value.value_start, value.value_end, value.nested, inner)
            out += buf[value.tag_start:value.size_start]
            out += encode_uvarint(len(inner))
            out += inner
        pos = section.end
    out += buf[pos:end]
