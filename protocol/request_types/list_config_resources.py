"""ListConfigResources requests v0-1 as kio reads them, for broker/handlers/list_config_resources.py."""

from typing import TypeAlias

from kio.schema.list_config_resources.v0 import request as v0
from kio.schema.list_config_resources.v1 import request as v1

__all__ = ("ListConfigResourcesRequest",)

ListConfigResourcesRequest: TypeAlias = v0.ListConfigResourcesRequest | v1.ListConfigResourcesRequest
