"""AlterClientQuotas requests v0-1 as kio reads them, for broker/handlers/alter_client_quotas.py."""

from typing import TypeAlias

from kio.schema.alter_client_quotas.v0 import request as v0
from kio.schema.alter_client_quotas.v1 import request as v1

__all__ = ("EntityData", "OpData", "EntryData", "AlterClientQuotasRequest")

EntityData: TypeAlias = v0.EntityData | v1.EntityData
OpData: TypeAlias = v0.OpData | v1.OpData
EntryData: TypeAlias = v0.EntryData | v1.EntryData
AlterClientQuotasRequest: TypeAlias = v0.AlterClientQuotasRequest | v1.AlterClientQuotasRequest
