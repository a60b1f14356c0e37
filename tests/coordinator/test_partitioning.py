"""The coordinator partition of a group id or transactional id, as Kafka computes it."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator.partitioning import java_string_hashcode, partition_for


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("Aa", 2112),
        ("BB", 2112),
        ("Hello World", -862545276),
        ("polygenelubricants", -(2**31)),  # Integer.MIN_VALUE
        ("\U0001f600", 1772899),  # one code point, two UTF-16 units
        ("é", 233),
    ],
)
def test_java_string_hashcode(s: str, expected: int) -> None:
    assert java_string_hashcode(s) == expected


@given(st.text())
def test_java_string_hashcode_is_the_int32_polynomial_over_utf16_units(s: str) -> None:
    units = struct.unpack(f">{len(s.encode('utf-16-be')) // 2}H", s.encode("utf-16-be"))
    h = 0
    for u in units:
        h = (h * 31 + u) % 2**32
    assert java_string_hashcode(s) == (h - 2**32 if h >= 2**31 else h)


def test_partition_for_takes_kafkas_abs() -> None:
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) == 0
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("Hello World", 50) == 862545276 % 50
