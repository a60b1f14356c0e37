"""How a group coordinator reads a remote share coordinator's ReadShareGroupStateSummary
(broker/share_state_admin.py): a key with no state (start offset -1, DeliveryCompleteCount -1) is
none, while a key its group initialized with no start offset yet (-1, count 0) has a state, whose
state epoch AlterShareGroupOffsets must go past (else the share coordinator fences the alter)."""

from __future__ import annotations

from kio.schema.read_share_group_state_summary.v1.response import PartitionResult
from kio.static.primitive import i16, i32, i64

from broker.share_state_admin import _summary
from coordinator.share.admin import ShareStateSummary


def result(state_epoch: int, start_offset: int, delivery_complete_count: int) -> PartitionResult:
    return PartitionResult(partition=i32(0), error_code=i16(0), error_message=None, state_epoch=i32(state_epoch),
                           leader_epoch=i32(0), start_offset=i64(start_offset),
                           delivery_complete_count=i32(delivery_complete_count))


def test_an_initialized_share_partition_not_yet_read_has_a_state() -> None:
    assert _summary(result(0, -1, -1)) is None
    assert _summary(result(3, -1, 0)) == ShareStateSummary(3, 0, -1, 0)
    assert _summary(result(3, 7, 2)) == ShareStateSummary(3, 0, 7, 2)
