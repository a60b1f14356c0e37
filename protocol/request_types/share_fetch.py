"""ShareFetch requests v1-2 as kio reads them, for broker/handlers/share_fetch.py."""

from typing import TypeAlias

from kio.schema.share_fetch.v1 import request as v1
from kio.schema.share_fetch.v2 import request as v2

__all__ = ("AcknowledgementBatch", "FetchPartition", "FetchTopic", "ForgottenTopic", "ShareFetchRequest")

AcknowledgementBatch: TypeAlias = v1.AcknowledgementBatch | v2.AcknowledgementBatch
FetchPartition: TypeAlias = v1.FetchPartition | v2.FetchPartition
FetchTopic: TypeAlias = v1.FetchTopic | v2.FetchTopic
ForgottenTopic: TypeAlias = v1.ForgottenTopic | v2.ForgottenTopic
ShareFetchRequest: TypeAlias = v1.ShareFetchRequest | v2.ShareFetchRequest
