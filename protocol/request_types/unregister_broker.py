"""UnregisterBroker requests v0-0 as kio reads them, for broker/handlers/unregister_broker.py."""

from typing import TypeAlias

from kio.schema.unregister_broker.v0 import request as v0

__all__ = ("UnregisterBrokerRequest",)

UnregisterBrokerRequest: TypeAlias = v0.UnregisterBrokerRequest
