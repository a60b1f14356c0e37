"""AlterConfigs requests v0-2 as kio reads them, for broker/handlers/alter_configs.py."""

from typing import TypeAlias

from kio.schema.alter_configs.v0 import request as v0
from kio.schema.alter_configs.v1 import request as v1
from kio.schema.alter_configs.v2 import request as v2

__all__ = ("AlterableConfig", "AlterConfigsResource", "AlterConfigsRequest")

AlterableConfig: TypeAlias = v0.AlterableConfig | v1.AlterableConfig | v2.AlterableConfig
AlterConfigsResource: TypeAlias = v0.AlterConfigsResource | v1.AlterConfigsResource | v2.AlterConfigsResource
AlterConfigsRequest: TypeAlias = v0.AlterConfigsRequest | v1.AlterConfigsRequest | v2.AlterConfigsRequest
