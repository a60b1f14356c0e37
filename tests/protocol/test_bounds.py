"""issue 9: no frame may make the request parser allocate what the frame cannot hold.

kio's native array readers reserve memory for the count they read; an unchecked count of 2^32-2
asks for 32 GiB and aborts the process. decode_request checks every length and count first
(protocol/bounds.py). These tests feed every API and version the broker parses, mutated at every
byte, to decode_request under an address-space limit: a regression shows as a clean failure (a
MemoryError) or as the test process aborting with "memory allocation of N bytes failed".
"""

from __future__ import annotations

import random
import resource
import struct
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.dispatch import HANDLERS, supported
from protocol.bounds import FrameBoundsError
from protocol.codec import decode_request
from protocol.errors import KafkaError
from tests.frame_fuzz import count_mutations, random_mutation, sample_frame

PARSED = sorted(
    (int(key), version)
    for key, handler in HANDLERS.items()
    for version in range(handler.min_version, handler.max_version + 1)
    if handler.parses(version)
)
HEADROOM = 1 << 30


@pytest.fixture
def address_space_limit() -> Iterator[None]:
    """Cap this process at its current size plus 1 GiB while the test runs, so an allocation the
    size of a lying count fails here instead of succeeding lazily under overcommit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/status") as status:
        vm_kib = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm_kib * 1024 + HEADROOM, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def decode_or_refuse(frame: bytes) -> None:
    try:
        decode_request(frame, supported)
    except KafkaError:
        pass


def test_the_metadata_v12_frame_of_the_issue_is_refused(address_space_limit: None) -> None:
    # Header v2 (api 3, v12, correlation 1, null client id, no tags), then a compact topic array
    # whose uvarint 2^32-1 claims 2^32-2 topics.
    frame = struct.pack(">hhih", 3, 12, 1, -1) + b"\x00" + b"\xff\xff\xff\xff\x0f"
    with pytest.raises(FrameBoundsError, match="claims 4294967294 items"):
        decode_request(frame, supported)


@pytest.mark.parametrize(("api_key", "version"), PARSED)
def test_sample_request_parses(api_key: int, version: int) -> None:
    header, _ = decode_request(sample_frame(api_key, version), supported)
    assert (header.api_key, header.api_version) == (api_key, version)


@pytest.mark.parametrize(("api_key", "version"), PARSED)
def test_lying_counts_and_lengths_at_every_position(
    api_key: int, version: int, address_space_limit: None
) -> None:
    for frame in count_mutations(sample_frame(api_key, version)):
        decode_or_refuse(frame)


@pytest.mark.parametrize(("api_key", "version"), PARSED)
def test_each_count_is_checked_before_the_parse(api_key: int, version: int) -> None:
    """The check itself, not kio, refuses some mutation of each request that has a count or a
    length: the check is generic over the schema, not tuned to the APIs a fuzzer tried."""
    refused_by_check = 0
    for frame in count_mutations(sample_frame(api_key, version)):
        try:
            decode_request(frame, supported)
        except FrameBoundsError:
            refused_by_check += 1
        except KafkaError:
            pass
    assert refused_by_check > 0


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(PARSED), st.randoms(use_true_random=False))
def test_random_mutations(parsed: tuple[int, int], rng: random.Random) -> None:
    frame = sample_frame(*parsed)
    for _ in range(20):
        frame = random_mutation(frame, rng) if len(frame) > 4 else sample_frame(*parsed)
        decode_or_refuse(frame)
