"""Client quota entities and their keys, checked and matched as Kafka's controller does
(ClientQuotaControlManager for AlterClientQuotas, ClientQuotasImage for DescribeClientQuotas).

An entity is a user, a client id, both, or an IP address; each name may be None, the default
entity (`--entity-default`). Pure: no store, no clock.
"""

from __future__ import annotations

import ipaddress
import json
import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final

from protocol.errors import ErrorCode, KafkaError

from ..principal import canonical_host

if TYPE_CHECKING:
    from protocol.request_types.describe_client_quotas import ComponentData

__all__ = ("ENFORCED", "Entity", "USER", "CLIENT_ID", "IP", "check_entity", "check_value", "filter_of",
           "from_store", "matches", "to_store")

USER: Final = "user"
CLIENT_ID: Final = "client-id"
IP: Final = "ip"

# Sorted (entity type, name or None) pairs.
Entity = tuple[tuple[str, str | None], ...]

# Kafka's QuotaConfig keys and their types, for user and client-id entities and for IP entities.
_CLIENT_KEYS: Final = {"producer_byte_rate": "long", "consumer_byte_rate": "long",
                       "request_percentage": "double", "controller_mutation_rate": "double"}
_IP_KEYS: Final = {"connection_creation_rate": "int"}
_INTEGRAL_MAX: Final = {"int": 2**31 - 1, "long": 2**63 - 1}
# The keys eosbroker throttles by; the others are refused rather than stored and ignored.
ENFORCED: Final = frozenset({"producer_byte_rate", "consumer_byte_rate", "connection_creation_rate"})
_PREFIX: Final = "quota:"


def invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.invalid_request, message)


def check_entity(pairs: Iterable[tuple[str, str | None]]) -> tuple[Entity, Mapping[str, str]]:
    """The entity of an AlterClientQuotas entry, and the keys it may set; KafkaError if Kafka
    refuses it."""
    found: dict[str, str | None] = {}
    for entity_type, name in pairs:
        if entity_type in found:
            raise invalid(f"Invalid client quota entity, duplicate entity entry {entity_type}")
        if entity_type not in (USER, CLIENT_ID, IP):
            raise invalid(f"Unhandled client quota entity type: {entity_type}")
        found[entity_type] = name
        if name == "":
            raise invalid(f"Empty {entity_type} not supported")
    if not found:
        raise invalid("Invalid empty client quota entity")
    entity = tuple(sorted(found.items()))
    if IP not in found:
        return entity, _CLIENT_KEYS
    if len(found) > 1:
        raise invalid("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
    name = found[IP]
    if name is not None and not _is_ip(name):
        raise invalid(f"{name} is not a valid IP or resolvable host.")
    # One spelling per address, the one connections are counted under (broker/principal.py).
    return ((IP, None if name is None else canonical_host(name)),), _IP_KEYS


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def check_value(keys: Mapping[str, str], key: str, value: float) -> None:
    """Kafka's validateQuotaKeyValue, then eosbroker's own refusal of keys it does not enforce."""
    kind = keys.get(key)
    if kind is None:
        raise invalid(f"Invalid configuration key {key}")
    if not value > 0.0:
        raise invalid(f"Quota {key} must be greater than 0")
    if kind in _INTEGRAL_MAX:
        if value > _INTEGRAL_MAX[kind]:
            raise invalid(f"Proposed value for {key} is too large for a{'n' if kind == 'int' else ''} {kind.upper()}.")
        if abs(math.fmod(value, 1.0)) > 1e-6:
            raise invalid(f"{key} cannot be a fractional value.")
    if key not in ENFORCED:
        raise invalid(f"eosbroker does not enforce {key} quotas (only producer_byte_rate, consumer_byte_rate and "
                      "connection_creation_rate), so it stores none; nothing was changed for this entity")


def to_store(entity: Entity) -> str:
    """The entity's name in the dynamic config store (beside broker ids and groups)."""
    return _PREFIX + json.dumps([list(pair) for pair in entity])


def from_store(name: str) -> Entity | None:
    if not name.startswith(_PREFIX):
        return None
    return tuple((str(t), None if n is None else str(n)) for t, n in json.loads(name[len(_PREFIX):]))


# -- DescribeClientQuotas ------------------------------------------------------------------------

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


def filter_of(components: Iterable[ComponentData]) -> tuple[dict[str, str | None], set[str]]:
    """(types that must have this name, types that must be present) of a DescribeClientQuotas
    filter; KafkaError with Kafka's messages for a filter it refuses."""
    exact: dict[str, str | None] = {}
    typed: set[str] = set()
    for c in components:
        entity_type, match = c.entity_type, c.match
        if not entity_type:
            raise invalid("Invalid empty entity type.")
        if entity_type in exact or entity_type in typed:
            raise invalid(f"Entity type {entity_type} cannot appear more than once in the filter.")
        if entity_type not in (USER, CLIENT_ID, IP):
            raise KafkaError(ErrorCode.unsupported_version, f"Unsupported entity type {entity_type}")
        if c.match_type == MATCH_EXACT:
            if match is None:
                raise invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[entity_type] = match
        elif c.match_type == MATCH_DEFAULT:
            if match is not None:
                raise invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[entity_type] = None
        elif c.match_type == MATCH_SPECIFIED:
            if match is not None:
                raise invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
            typed.add(entity_type)
        else:
            raise invalid(f"Unknown match type {c.match_type}")
    named = exact.keys() | typed
    if IP in named and (USER in named or CLIENT_ID in named):
        raise invalid("Invalid entity filter component combination. IP filter component should not be used "
                      "with user or clientId filter component.")
    return exact, typed


def matches(entity: Entity, exact: Mapping[str, str | None], typed: set[str], strict: bool) -> bool:
    names = dict(entity)
    if strict and len(names) != len(exact) + len(typed):
        return False
    return (all(t in names and names[t] == n for t, n in exact.items())
            and all(t in names for t in typed))
