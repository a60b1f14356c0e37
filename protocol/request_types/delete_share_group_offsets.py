"""DeleteShareGroupOffsets requests v0-0 as kio reads them, for broker/handlers/delete_share_group_offsets.py."""

from typing import TypeAlias

from kio.schema.delete_share_group_offsets.v0 import request as v0

__all__ = ("DeleteShareGroupOffsetsRequestTopic", "DeleteShareGroupOffsetsRequest")

DeleteShareGroupOffsetsRequestTopic: TypeAlias = v0.DeleteShareGroupOffsetsRequestTopic
DeleteShareGroupOffsetsRequest: TypeAlias = v0.DeleteShareGroupOffsetsRequest
