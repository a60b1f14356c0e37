"""SaslAuthenticate requests v0-2 as kio reads them, for broker/handlers/sasl_authenticate.py."""

from typing import TypeAlias

from kio.schema.sasl_authenticate.v0 import request as v0
from kio.schema.sasl_authenticate.v1 import request as v1
from kio.schema.sasl_authenticate.v2 import request as v2

__all__ = ("SaslAuthenticateRequest",)

SaslAuthenticateRequest: TypeAlias = (
    v0.SaslAuthenticateRequest | v1.SaslAuthenticateRequest | v2.SaslAuthenticateRequest
)
