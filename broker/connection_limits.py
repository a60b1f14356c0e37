"""Limits on client connections, as Kafka's ConnectionQuotas applies them at accept time.

- `max.connections.per.ip` (and `max.connections.per.ip.overrides`, "host:count,..."): a
  connection past its address's limit is closed at once, logged as Kafka logs it ("Rejected
  connection from ..., address already has the configured maximum of N connections.").
- `max.connections`: past it, a new connection is closed at once. (Kafka stops accepting
  instead and leaves connections waiting in the kernel's backlog; asyncio's server cannot pause
  its accepts, and a closed connection tells the client more than one that hangs.)
- `max.connection.creation.rate`: a connection accepted above the broker-wide rate is read from
  only once the rate is back within it, as Kafka's acceptor waits before accepting more.
- The `connection_creation_rate` client quota of an IP entity (`kafka-configs --entity-type ips`):
  a connection that puts its address over the rate is closed once the throttle time has passed
  (so that the client does not reconnect at once), and not counted against the rate.
The inter-broker listener, when the broker has others, is exempt from the broker-wide two, as
Kafka exempts it; the per-address limits apply to every listener, as in Kafka.
Pure: the clock is an argument; the connection asks and reports its close.
"""

from __future__ import annotations

import enum
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .principal import canonical_host
from .quotas.rate import SampledRate

if TYPE_CHECKING:
    from .config import BrokerConfig

__all__ = ("Admission", "ConnectionLimits", "Verdict", "parse_overrides")


class Verdict(enum.Enum):
    ADMIT = "admit"  # after delay_ms (0: at once)
    REFUSE = "refuse"  # close now
    THROTTLE = "throttle"  # close after delay_ms


@dataclass(frozen=True, slots=True)
class Admission:
    verdict: Verdict
    delay_ms: int = 0
    why: str = ""


ADMITTED = Admission(Verdict.ADMIT)
_MAX_IDLE_RATES = 4096  # past this many addresses measured, the idle ones are dropped


def protected(config: BrokerConfig, listener: str) -> bool:
    """Kafka's protectedListener: the inter-broker listener of a broker with more than one."""
    inter_broker = (config.inter_broker_listener_name or config.security_inter_broker_protocol).strip().upper()
    return listener == inter_broker and len(config.client_listeners) > 1


def parse_overrides(raw: str) -> dict[str, int]:
    """max.connections.per.ip.overrides: "host:count" pairs; a host name stands for its addresses."""
    out: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        host, _, count = item.rpartition(":")
        for address in _addresses(host.strip()):
            out[address] = int(count)
    return out


def _addresses(host: str) -> list[str]:
    try:
        return sorted({canonical_host(info[4][0]) for info in socket.getaddrinfo(host, None)})
    except OSError:
        return [canonical_host(host)]


class ConnectionLimits:
    def __init__(self, samples: int = 11, window_ms: int = 1000) -> None:
        self.samples, self.window_ms = samples, window_ms
        self.by_ip: dict[str, int] = {}
        self.total = 0
        self._accepted = SampledRate(samples, window_ms)
        self._ip_rates: dict[str, SampledRate] = {}
        self._overrides: tuple[str, dict[str, int]] = ("", {})

    def admit(self, config: BrokerConfig, host: str, listener: str, ip_rate: float | None,
              now_ms: float) -> Admission:
        """Whether a connection from host on listener may stay; counted when admitted (release it
        later)."""
        exempt = protected(config, listener)
        if not exempt and self.total >= config.max_connections:
            return Admission(Verdict.REFUSE, why=f"the broker already has max.connections={config.max_connections} "
                                                 "connections")
        limit = self._per_ip_limit(config, host)
        if self.by_ip.get(host, 0) >= limit:
            return Admission(Verdict.REFUSE, why=f"Rejected connection from {host}, address already has the "
                                                 f"configured maximum of {limit} connections.")
        if ip_rate is not None and (throttle_ms := self._ip_throttle(host, ip_rate, now_ms)):
            return Admission(Verdict.THROTTLE, throttle_ms, f"Connection from {host} throttled for {throttle_ms} ms "
                                                            f"(connection_creation_rate={ip_rate:g})")
        self._count(host)
        if exempt:
            return ADMITTED
        self._accepted.record(1, now_ms)
        delay_ms = 0
        if config.max_connection_creation_rate < 2**31 - 1:
            delay_ms = self._accepted.throttle_ms(config.max_connection_creation_rate, now_ms)
        return Admission(Verdict.ADMIT, delay_ms) if delay_ms else ADMITTED

    def release(self, host: str) -> None:
        self.total -= 1
        left = self.by_ip[host] - 1
        if left:
            self.by_ip[host] = left
        else:
            del self.by_ip[host]

    def _count(self, host: str) -> None:
        self.total += 1
        self.by_ip[host] = self.by_ip.get(host, 0) + 1

    def _per_ip_limit(self, config: BrokerConfig, host: str) -> int:
        raw = config.max_connections_per_ip_overrides
        if raw != self._overrides[0]:
            self._overrides = (raw, parse_overrides(raw))
        return self._overrides[1].get(host, config.max_connections_per_ip)

    def _ip_throttle(self, host: str, bound: float, now_ms: float) -> int:
        rate = self._ip_rates.get(host)
        if rate is None:
            if len(self._ip_rates) >= _MAX_IDLE_RATES:
                for idle in [ip for ip, r in self._ip_rates.items() if r.total(now_ms) == 0]:
                    del self._ip_rates[idle]
            rate = self._ip_rates[host] = SampledRate(self.samples, self.window_ms)
        rate.record(1, now_ms)
        throttle_ms = rate.throttle_ms(bound, now_ms)
        if throttle_ms:
            rate.record(-1, now_ms)  # a connection not accepted is not counted
        return throttle_ms
