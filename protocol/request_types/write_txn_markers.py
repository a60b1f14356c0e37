"""WriteTxnMarkers requests v1-2 as kio reads them, for broker/handlers/write_txn_markers.py."""

from typing import TypeAlias

from kio.schema.write_txn_markers.v1 import request as v1
from kio.schema.write_txn_markers.v2 import request as v2

__all__ = ("WritableTxnMarkerTopic", "WritableTxnMarker", "WriteTxnMarkersRequest")

WritableTxnMarkerTopic: TypeAlias = v1.WritableTxnMarkerTopic | v2.WritableTxnMarkerTopic
WritableTxnMarker: TypeAlias = v1.WritableTxnMarker | v2.WritableTxnMarker
WriteTxnMarkersRequest: TypeAlias = v1.WriteTxnMarkersRequest | v2.WriteTxnMarkersRequest
