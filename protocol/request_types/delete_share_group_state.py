"""DeleteShareGroupState requests v0 as kio reads them, for broker/handlers/delete_share_group_state.py
(tests/broker/test_request_types.py checks them against the dispatch table)."""

from typing import TypeAlias

from kio.schema.delete_share_group_state.v0 import request as v0

__all__ = ("DeleteShareGroupStateRequest",)

DeleteShareGroupStateRequest: TypeAlias = v0.DeleteShareGroupStateRequest
