"""DeleteRecords requests v0-2 as kio reads them, for broker/handlers/delete_records.py."""

from typing import TypeAlias

from kio.schema.delete_records.v0 import request as v0
from kio.schema.delete_records.v1 import request as v1
from kio.schema.delete_records.v2 import request as v2

__all__ = ("DeleteRecordsPartition", "DeleteRecordsTopic", "DeleteRecordsRequest")

DeleteRecordsPartition: TypeAlias = v0.DeleteRecordsPartition | v1.DeleteRecordsPartition | v2.DeleteRecordsPartition
DeleteRecordsTopic: TypeAlias = v0.DeleteRecordsTopic | v1.DeleteRecordsTopic | v2.DeleteRecordsTopic
DeleteRecordsRequest: TypeAlias = v0.DeleteRecordsRequest | v1.DeleteRecordsRequest | v2.DeleteRecordsRequest
