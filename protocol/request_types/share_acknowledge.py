"""ShareAcknowledge requests v1-2 as kio reads them, for broker/handlers/share_acknowledge.py."""

from typing import TypeAlias

from kio.schema.share_acknowledge.v1 import request as v1
from kio.schema.share_acknowledge.v2 import request as v2

__all__ = ("AcknowledgementBatch", "AcknowledgePartition", "AcknowledgeTopic", "ShareAcknowledgeRequest")

AcknowledgementBatch: TypeAlias = v1.AcknowledgementBatch | v2.AcknowledgementBatch
AcknowledgePartition: TypeAlias = v1.AcknowledgePartition | v2.AcknowledgePartition
AcknowledgeTopic: TypeAlias = v1.AcknowledgeTopic | v2.AcknowledgeTopic
ShareAcknowledgeRequest: TypeAlias = v1.ShareAcknowledgeRequest | v2.ShareAcknowledgeRequest
