"""InitProducerId requests v0-5 as kio reads them, for broker/handlers/init_producer_id.py."""

from typing import TypeAlias

from kio.schema.init_producer_id.v0 import request as v0
from kio.schema.init_producer_id.v1 import request as v1
from kio.schema.init_producer_id.v2 import request as v2
from kio.schema.init_producer_id.v3 import request as v3
from kio.schema.init_producer_id.v4 import request as v4
from kio.schema.init_producer_id.v5 import request as v5

__all__ = ("InitProducerIdRequest",)

InitProducerIdRequest: TypeAlias = (
    v0.InitProducerIdRequest | v1.InitProducerIdRequest | v2.InitProducerIdRequest | v3.InitProducerIdRequest
    | v4.InitProducerIdRequest | v5.InitProducerIdRequest
)
