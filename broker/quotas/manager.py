"""Client quotas in force on this broker, and each client's byte rates against them.

Set with AlterClientQuotas (`kafka-configs --alter --entity-type users/clients`), kept in the
dynamic config store beside the broker configs (a file on a single node, PostgreSQL in cluster
mode, where every broker enforces them on what it serves, as each Kafka broker does). The quota
that applies to a request follows Kafka's DefaultQuotaCallback: for a user u and client id c,
/users/u/clients/c, /users/u/clients/<default>, /users/u, /users/<default>/clients/c,
/users/<default>/clients/<default>, /users/<default>, /clients/c, /clients/<default>; the first
set is the bound, and clients that fall under one default entity are each measured on their own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Final

from storage.api import BrokerConfigStore

from .entities import CLIENT_ID, IP, USER, Entity, from_store, to_store
from .rate import SampledRate

__all__ = ("ClientQuotas", "QuotaKind", "now_ms")

# (user, client id) as measured: "" where the quota that applies does not name that part.
Tags = tuple[str, str]
_MAX_IDLE_RATES: Final = 4096  # past this many measured clients, the idle ones are dropped


class _Absent:
    """An entity part that is not there (None is the part's default entity, "<default>")."""


_ABSENT: Final = _Absent()


def _entity(user: str | None | _Absent = _ABSENT, client: str | None | _Absent = _ABSENT) -> Entity:
    """An entity from its parts."""
    pairs: list[tuple[str, str | None]] = []
    if not isinstance(client, _Absent):
        pairs.append((CLIENT_ID, client))
    if not isinstance(user, _Absent):
        pairs.append((USER, user))
    return tuple(pairs)


class QuotaKind:
    """One quota key (producer_byte_rate or consumer_byte_rate): its bounds and the rates."""

    def __init__(self, key: str, samples: int, window_ms: int) -> None:
        self.key = key
        self.samples, self.window_ms = samples, window_ms
        self.bounds: dict[Entity, float] = {}
        self._resolved: dict[Tags, tuple[Tags, float | None]] = {}
        self._rates: dict[Tags, SampledRate] = {}
        # Throttle times given and how many, per client, over the same windows (Kafka's throttle-time
        # sensor, an average of the throttles given).
        self._throttles: dict[Tags, tuple[SampledRate, SampledRate]] = {}

    def set_bounds(self, bounds: dict[Entity, float]) -> None:
        self.bounds = bounds
        self._resolved.clear()

    def resolve(self, user: str, client_id: str) -> tuple[Tags, float | None]:
        """(what the client is measured as, its bound or None)."""
        key = (user, client_id)
        found = self._resolved.get(key)
        if found is None:
            found = self._resolved[key] = self._resolve(user, client_id)
        return found

    def _resolve(self, user: str, client_id: str) -> tuple[Tags, float | None]:
        b = self.bounds
        for entity, tags in (
            (_entity(user, client_id), (user, client_id)),
            (_entity(user, None), (user, client_id)),
            (_entity(user), (user, "")),
            (_entity(None, client_id), (user, client_id)),
            (_entity(None, None), (user, client_id)),
            (_entity(None), (user, "")),
            (_entity(client=client_id), ("", client_id)),
            (_entity(client=None), ("", client_id)),
        ):
            if entity in b:
                return tags, b[entity]
        return ("", client_id), None

    def record(self, user: str, client_id: str, value: float, now_ms: float) -> int:
        """Count value against the client's quota; how long it is to be throttled, in ms."""
        tags, bound = self.resolve(user, client_id)
        if bound is None:
            return 0
        rate = self._rates.get(tags)
        if rate is None:
            if len(self._rates) >= _MAX_IDLE_RATES:
                self._drop_idle(now_ms)
            rate = self._rates[tags] = SampledRate(self.samples, self.window_ms)
        rate.record(value, now_ms)
        throttle_ms = rate.throttle_ms(bound, now_ms)
        if throttle_ms:
            given = self._throttles.get(tags)
            if given is None:
                given = self._throttles[tags] = (SampledRate(self.samples, self.window_ms),
                                                 SampledRate(self.samples, self.window_ms))
            given[0].record(throttle_ms, now_ms)
            given[1].record(1, now_ms)
        return throttle_ms

    def measured(self, now_ms: float) -> list[tuple[Tags, float, float]]:
        """(user, client id) measured, its byte rate and its average throttle time in ms (0 if none
        in the windows): Kafka's byte-rate and throttle-time of a Produce or Fetch quota sensor."""
        out = []
        for tags, rate in self._rates.items():
            throttle = 0.0
            if (given := self._throttles.get(tags)) is not None and (count := given[1].total(now_ms)):
                throttle = given[0].total(now_ms) / count
            out.append((tags, rate.rate(now_ms), throttle))
        return out

    def unrecord(self, user: str, client_id: str, value: float, now_ms: float) -> None:
        """Take back what record counted (a throttled fetch sends no records)."""
        tags, bound = self.resolve(user, client_id)
        if bound is not None and (rate := self._rates.get(tags)) is not None:
            rate.record(-value, now_ms)

    def max_in_window(self, user: str, client_id: str) -> int | None:
        """The most one response may carry without certain throttling (Kafka's
        getMaxValueInQuotaWindow), or None without a bound."""
        bound = self.resolve(user, client_id)[1]
        if bound is None:
            return None
        return int(bound * (self.samples - 1) * self.window_ms / 1000)

    def _drop_idle(self, now_ms: float) -> None:
        for tags in [t for t, r in self._rates.items() if r.rate(now_ms) == 0.0]:
            del self._rates[tags]
            self._throttles.pop(tags, None)


class ClientQuotas:
    """The quotas set (from the store, kept current by its listener) and their enforcement."""

    def __init__(self, store: BrokerConfigStore, samples: int = 11, window_ms: int = 1000) -> None:
        self.store = store
        self.produce = QuotaKind("producer_byte_rate", samples, window_ms)
        self.fetch = QuotaKind("consumer_byte_rate", samples, window_ms)
        self.entries: dict[Entity, dict[str, float]] = {}
        self._altering = asyncio.Lock()
        store.add_listener(self.reload)
        self.reload()

    def reload(self) -> None:
        entries: dict[Entity, dict[str, float]] = {}
        for name in self.store.entities():
            entity = from_store(name)
            if entity is not None and (configs := self.store.configs(name)):
                entries[entity] = {k: float(v) for k, v in configs.items()}
        self.entries = entries
        for kind in (self.produce, self.fetch):
            kind.set_bounds({e: q[kind.key] for e, q in entries.items() if kind.key in q})

    def ip_connection_rate(self, host: str) -> float | None:
        """The connection_creation_rate quota of an address: its own, else the default IP's."""
        entries = self.entries
        for entity in (((IP, host),), ((IP, None),)):
            if (quota := entries.get(entity)) is not None and "connection_creation_rate" in quota:
                return quota["connection_creation_rate"]
        return None

    async def alter(self, changes: Mapping[Entity, Callable[[Mapping[str, float]], Mapping[str, float]]],
                    validate_only: bool) -> None:
        """Make compute(the entity's quotas) each entity's quotas, in one write to the store."""
        async with self._altering:
            updates = {}
            for entity, compute in changes.items():
                before = self.entries.get(entity, {})
                after = compute(before)
                if dict(after) != before:
                    updates[to_store(entity)] = {k: repr(float(v)) for k, v in after.items()}
            if validate_only or not updates:
                return
            await self.store.replace_many(updates)
            self.reload()


def now_ms() -> float:
    return time.monotonic() * 1000.0
