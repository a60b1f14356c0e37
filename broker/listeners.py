"""Kafka's `listeners` / `advertised.listeners` values: NAME://host:port, comma separated.

eosbroker serves one PLAINTEXT listener (several listeners come with the cluster work). So that a
stock KRaft server.properties works unchanged, the listeners named in `controller.listener.names`
are set aside, and a listener's security protocol is looked up in `listener.security.protocol.map`
(default: each protocol's own name maps to itself), as Kafka does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, NamedTuple

__all__ = ("EndPoint", "ListenerError", "advertised_endpoint", "broker_endpoint", "parse_listeners")

# Kafka's Endpoint regex: host may be empty (all interfaces) or a bracketed IPv6 address.
_ENDPOINT: Final = re.compile(r"^(?P<name>[A-Za-z0-9_]+)://\[?(?P<host>[0-9a-zA-Z\-%._:]*)\]?:(?P<port>-?[0-9]+)$")
_SECURITY_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
PORT_MAX: Final = 65535


class ListenerError(ValueError):
    """A listener value that does not parse or that this broker cannot serve."""


class EndPoint(NamedTuple):
    name: str
    host: str  # "" binds every interface, as in Kafka
    port: int


def parse_listeners(key: str, value: str) -> list[EndPoint]:
    """Every endpoint of a listeners value; port 0 (an ephemeral port) is allowed, as Kafka allows it."""
    endpoints = []
    for item in (v.strip() for v in value.split(",")):
        m = _ENDPOINT.match(item)
        if m is None:
            raise ListenerError(f"Invalid value {item!r} in {key}: expected NAME://host:port")
        port = int(m["port"])
        if not 0 <= port <= PORT_MAX:
            raise ListenerError(f"Invalid port {port} in {key}={value}: must be between 0 and {PORT_MAX}")
        endpoints.append(EndPoint(m["name"].upper(), m["host"], port))
    names = [e.name for e in endpoints]
    if len(set(names)) != len(names):
        raise ListenerError(f"{key}={value}: each listener must have a different name")
    return endpoints


def _protocol_map(value: str | None) -> Mapping[str, str]:
    if not value:
        return {p: p for p in _SECURITY_PROTOCOLS}
    out = {}
    for item in (v.strip() for v in value.split(",") if v.strip()):
        name, sep, protocol = item.partition(":")
        if not sep or protocol.strip().upper() not in _SECURITY_PROTOCOLS:
            raise ListenerError(f"Invalid value {item!r} in listener.security.protocol.map: expected NAME:PROTOCOL")
        out[name.strip().upper()] = protocol.strip().upper()
    return out


def broker_endpoint(listeners: str, protocol_map: str | None = None, controller_names: str | None = None) -> EndPoint:
    """The one client listener in `listeners`, which must speak PLAINTEXT."""
    controllers = {n.strip().upper() for n in (controller_names or "").split(",") if n.strip()}
    endpoints = [e for e in parse_listeners("listeners", listeners) if e.name not in controllers]
    if len(endpoints) != 1:
        raise ListenerError(f"listeners={listeners}: eosbroker serves exactly one client listener "
                            f"(found {len(endpoints)}); list controller listeners in controller.listener.names")
    (endpoint,) = endpoints
    protocol = _protocol_map(protocol_map).get(endpoint.name)
    if protocol is None:
        raise ListenerError(f"No security protocol defined for listener {endpoint.name} "
                            "(listener.security.protocol.map)")
    if protocol != "PLAINTEXT":
        raise ListenerError(f"listener {endpoint.name} uses {protocol}; eosbroker serves PLAINTEXT only")
    return endpoint


def advertised_endpoint(advertised: str, name: str) -> EndPoint:
    """The endpoint of `advertised.listeners` for the broker's listener `name`."""
    matches = [e for e in parse_listeners("advertised.listeners", advertised) if e.name == name]
    if not matches:
        raise ListenerError(f"advertised.listeners={advertised} has no listener named {name} "
                            "(its names must be among those in listeners)")
    endpoint = matches[0]
    if endpoint.host == "0.0.0.0":
        raise ListenerError("advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                            "Use a routable IP address.")
    if endpoint.port == 0:
        raise ListenerError(f"advertised.listeners={advertised}: the advertised port must be between 1 and "
                            f"{PORT_MAX}")
    return endpoint
