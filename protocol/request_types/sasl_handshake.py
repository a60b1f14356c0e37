"""SaslHandshake requests v0-1 as kio reads them, for broker/handlers/sasl_handshake.py."""

from typing import TypeAlias

from kio.schema.sasl_handshake.v0 import request as v0
from kio.schema.sasl_handshake.v1 import request as v1

__all__ = ("SaslHandshakeRequest",)

SaslHandshakeRequest: TypeAlias = v0.SaslHandshakeRequest | v1.SaslHandshakeRequest
