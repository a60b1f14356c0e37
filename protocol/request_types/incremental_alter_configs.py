"""IncrementalAlterConfigs requests v0-1 as kio reads them, for broker/handlers/incremental_alter_configs.py."""

from typing import TypeAlias

from kio.schema.incremental_alter_configs.v0 import request as v0
from kio.schema.incremental_alter_configs.v1 import request as v1

__all__ = ("AlterableConfig", "AlterConfigsResource", "IncrementalAlterConfigsRequest")

AlterableConfig: TypeAlias = v0.AlterableConfig | v1.AlterableConfig
AlterConfigsResource: TypeAlias = v0.AlterConfigsResource | v1.AlterConfigsResource
IncrementalAlterConfigsRequest: TypeAlias = v0.IncrementalAlterConfigsRequest | v1.IncrementalAlterConfigsRequest
