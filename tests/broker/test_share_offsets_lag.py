"""DescribeShareGroupOffsets v1's lag (broker/handlers/describe_share_group_offsets.py): unknown (-1)
without a high watermark, without a delivery-complete count, and for a share-partition initialized
but not yet read (start offset -1), as Kafka 4.4's shouldComputeSharePartitionLag has it."""

from __future__ import annotations

from broker.handlers.describe_share_group_offsets import _lag
from coordinator.share.admin import ShareStateSummary


def test_the_lag_of_a_share_partition_not_yet_read_is_unknown() -> None:
    assert _lag(10, ShareStateSummary(3, 0, 4, 2)) == 4
    assert _lag(None, ShareStateSummary(3, 0, 4, 2)) == -1
    assert _lag(10, ShareStateSummary(3, 0, 4, -1)) == -1
    assert _lag(10, ShareStateSummary(3, 0, -1, 0)) == -1
