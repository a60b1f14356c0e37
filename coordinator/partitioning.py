"""Which partition of its internal topic coordinates a key: Kafka's Utils.abs(key.hashCode()) %
partitions, for a group id over __consumer_offsets and a transactional id over __transaction_state.
Both must match Kafka's exactly: clients and tools compute the same partition."""

from __future__ import annotations

import functools

__all__ = ("java_string_hashcode", "partition_for")


def java_string_hashcode(s: str) -> int:
    """Java's String.hashCode: s[0]*31^(n-1) + ... over UTF-16 code units, in signed int32."""
    units = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


@functools.lru_cache(maxsize=4096)  # asked for on every group request; bounded, the ids are the clients'
def partition_for(key: str, num_partitions: int) -> int:
    h = java_string_hashcode(key)
    # Kafka's Utils.abs maps Integer.MIN_VALUE to 0 instead of overflowing.
    return (0 if h == -(2**31) else abs(h)) % num_partitions
