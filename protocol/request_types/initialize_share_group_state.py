"""InitializeShareGroupState requests v0 as kio reads them, for broker/handlers/initialize_share_group_state.py
(tests/broker/test_request_types.py checks them against the dispatch table)."""

from typing import TypeAlias

from kio.schema.initialize_share_group_state.v0 import request as v0

__all__ = ("InitializeShareGroupStateRequest",)

InitializeShareGroupStateRequest: TypeAlias = v0.InitializeShareGroupStateRequest
