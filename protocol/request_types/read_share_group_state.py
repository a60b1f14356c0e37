"""ReadShareGroupState requests v0 as kio reads them, for broker/handlers/read_share_group_state.py
(tests/broker/test_request_types.py checks them against the dispatch table)."""

from typing import TypeAlias

from kio.schema.read_share_group_state.v0 import request as v0

__all__ = ("ReadShareGroupStateRequest",)

ReadShareGroupStateRequest: TypeAlias = v0.ReadShareGroupStateRequest
