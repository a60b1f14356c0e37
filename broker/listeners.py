"""Kafka's `listeners` / `advertised.listeners` values: NAME://host:port, comma separated.

eosbroker serves every client listener at once, each with its security protocol (PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL) looked up in `listener.security.protocol.map` (default: each protocol's
own name maps to itself), as Kafka does. So that a stock KRaft server.properties works unchanged,
the listeners named in `controller.listener.names` are set aside.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Final, NamedTuple, TypedDict

__all__ = ("CommandLine", "EndPoint", "Listener", "ListenerError", "SECURITY_PROTOCOLS", "advertised_endpoints",
           "client_endpoints", "default_advertised_host", "parse_listeners", "resolve_listeners")

# Kafka's Endpoint regex: host may be empty (all interfaces) or a bracketed IPv6 address.
_ENDPOINT: Final = re.compile(r"^(?P<name>[A-Za-z0-9_]+)://\[?(?P<host>[0-9a-zA-Z\-%._:]*)\]?:(?P<port>-?[0-9]+)$")
SECURITY_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
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
        return {p: p for p in SECURITY_PROTOCOLS}
    out = {}
    for item in (v.strip() for v in value.split(",") if v.strip()):
        name, sep, protocol = item.partition(":")
        if not sep or protocol.strip().upper() not in SECURITY_PROTOCOLS:
            raise ListenerError(f"Invalid value {item!r} in listener.security.protocol.map: expected NAME:PROTOCOL")
        out[name.strip().upper()] = protocol.strip().upper()
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Listener:
    """One client listener as served: where it binds, what it speaks, what it advertises."""

    name: str
    security_protocol: str
    host: str
    port: int  # 0 until bound, then the bound port
    advertised_host: str
    advertised_port: int | None  # None: the bound port

    @property
    def advertised(self) -> tuple[str, int]:
        """What Metadata, FindCoordinator and DescribeCluster return to a client of this listener."""
        return self.advertised_host, self.port if self.advertised_port is None else self.advertised_port


def client_endpoints(listeners: str, protocol_map: str | None = None,
                     controller_names: str | None = None) -> list[tuple[EndPoint, str]]:
    """The client listeners of `listeners`, in order, each with its security protocol."""
    controllers = _controller_names(controller_names)
    endpoints = [e for e in parse_listeners("listeners", listeners) if e.name not in controllers]
    if not endpoints:
        raise ListenerError(f"listeners={listeners}: no client listener (all are in controller.listener.names)")
    protocols = _protocol_map(protocol_map)
    out = []
    for endpoint in endpoints:
        protocol = protocols.get(endpoint.name)
        if protocol is None:
            raise ListenerError(f"No security protocol defined for listener {endpoint.name} "
                                "(listener.security.protocol.map)")
        out.append((endpoint, protocol))
    ports = [e.port for e, _ in out if e.port != 0]
    if len(set(ports)) != len(ports):
        raise ListenerError(f"listeners={listeners}: each listener must have a different port")
    return out


def _controller_names(controller_names: str | None) -> frozenset[str]:
    return frozenset(n.strip().upper() for n in (controller_names or "").split(",") if n.strip())


def advertised_endpoints(advertised: str, names: Collection[str], controller_names: str | None = None,
                         ) -> dict[str, EndPoint]:
    """The endpoints of `advertised.listeners` by listener name; each name must be a listener's
    (Kafka: a subset of listeners); a listener not named here advertises its own address. A
    controller listener's entry (Kafka's own server.properties advertises CONTROLLER, KIP-853) is
    set aside with that listener."""
    out = {}
    controllers = _controller_names(controller_names)
    for endpoint in parse_listeners("advertised.listeners", advertised):
        if endpoint.name in controllers:
            continue
        if endpoint.name not in names:
            raise ListenerError(f"advertised.listeners={advertised} names {endpoint.name}, which is not a "
                                f"listener (its names must be among those in listeners: {', '.join(names)})")
        if endpoint.host == "0.0.0.0":
            raise ListenerError("advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                                "Use a routable IP address.")
        if endpoint.port == 0:
            raise ListenerError(f"advertised.listeners={advertised}: the advertised port must be between 1 and "
                                f"{PORT_MAX}")
        out[endpoint.name] = endpoint
    return out


class CommandLine(TypedDict, total=False):
    """What the command line overrides (None or absent: not given)."""

    host: str | None
    port: int | None
    log_dirs: str | None
    advertised_host: str | None
    advertised_port: int | None


def _check_port(flag: str, port: int, low: int) -> int:
    if not low <= port <= PORT_MAX:
        raise ListenerError(f"Invalid value {port} for {flag}: a port must be between {low} and {PORT_MAX}")
    return port


def resolve_listeners(listeners: str | None, advertised: str | None, props: Mapping[str, str],
                      cli: CommandLine, default: tuple[str, int]) -> dict[str, object]:
    """BrokerConfig's host, port, advertised_* (the first listener's) and listener_endpoints (all):
    every client listener with its bind and advertised address, from listeners /
    advertised.listeners; the command-line flags, when given, override their part of the first.
    Port 0 binds an ephemeral port."""
    found = (client_endpoints(listeners, props.get("listener.security.protocol.map"),
                              props.get("controller.listener.names"))
             if listeners else [(EndPoint("PLAINTEXT", *default), "PLAINTEXT")])
    listed = (advertised_endpoints(advertised, [e.name for e, _ in found], props.get("controller.listener.names"))
              if advertised else {})
    (first, protocol), rest = found[0], found[1:]
    given_host = cli.get("host")
    host = given_host if given_host is not None else first.host
    given_port = cli.get("port")
    port = _check_port("--port", given_port, 0) if given_port is not None else first.port
    mine = listed.get(first.name)
    adv_host = cli.get("advertised_host") or (mine.host if mine else None) or None
    adv_port = cli.get("advertised_port")
    if adv_port is not None:
        _check_port("--advertised-port", adv_port, 1)
    elif mine is not None:
        adv_port = mine.port
    if adv_host == "0.0.0.0":
        raise ListenerError("--advertised-host cannot be the nonroutable meta-address 0.0.0.0; use a routable "
                          "address")
    if adv_host is None and host in _WILDCARDS:
        adv_host = socket.getfqdn()  # as Kafka advertises a listener bound to every interface
    primary = Listener(name=first.name, security_protocol=protocol, host=host, port=port,
                       advertised_host=adv_host or host, advertised_port=adv_port)
    return {"host": host, "port": port, "advertised_host": adv_host, "advertised_port": adv_port,
            "listener_endpoints": (primary, *(_listener(e, p, listed.get(e.name)) for e, p in rest))}


def default_advertised_host(host: str) -> str:
    """What a listener bound to `host` advertises when advertised.listeners does not name it."""
    return socket.getfqdn() if host in _WILDCARDS else host


def _listener(endpoint: EndPoint, protocol: str, advertised: EndPoint | None) -> Listener:
    adv_host = advertised.host if advertised is not None and advertised.host else None
    if adv_host is None:
        adv_host = default_advertised_host(endpoint.host)
    return Listener(name=endpoint.name, security_protocol=protocol, host=endpoint.host, port=endpoint.port,
                    advertised_host=adv_host, advertised_port=advertised.port if advertised is not None else None)


_WILDCARDS: Final = frozenset({"", "0.0.0.0", "::"})
