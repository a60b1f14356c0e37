"""ReadShareGroupStateSummary requests v0-1 as kio reads them, for
broker/handlers/read_share_group_state_summary.py (tests/broker/test_request_types.py checks them
against the dispatch table)."""

from typing import TypeAlias

from kio.schema.read_share_group_state_summary.v0 import request as v0
from kio.schema.read_share_group_state_summary.v1 import request as v1

__all__ = ("ReadShareGroupStateSummaryRequest",)

ReadShareGroupStateSummaryRequest: TypeAlias = (v0.ReadShareGroupStateSummaryRequest
                                                 | v1.ReadShareGroupStateSummaryRequest)
