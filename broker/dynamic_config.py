"""Dynamic broker configs at run time (Kafka's DynamicBrokerConfig): the per-broker and
cluster-default sets AlterConfigs and IncrementalAlterConfigs change on a BROKER resource, kept
durably in a BrokerConfigStore, and the broker config in force that they make.

Precedence as Kafka's: this broker's dynamic value, then the cluster default's, then the static
one (server.properties, --set), then Kafka's default. A change is applied where eosbroker reads
the key, live: the broker-level defaults of topic configs (log.retention.ms, log.segment.bytes,
log.cleanup.policy, message.max.bytes, log.cleaner.min.compaction.lag.ms, ...: every topic
without its own value adopts them) and the log cleaner's settings (its number of workers at the
next start). Every other dynamic key is accepted, stored and described only, as Kafka stores keys
of components a broker may not run: the thread pools eosbroker does not have, connection quotas,
metric reporters, and also listener security (a new key store is not loaded: the listeners are
built from the static config before the store is read) and producer.id.expiration.ms.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping

from storage.api import TOPIC_CONFIG_DEFAULTS_FROM_BROKER, BrokerConfigStore

from .config import PROPERTY_FIELDS, BrokerConfig, ConfigError, Spec
from .config_def import FieldValues
from .dynamic_keys import validate_dynamic, validate_thread_counts
from .group_configs import entity as group_entity

__all__ = ("DEFAULT_ENTITY", "DynamicBrokerConfig", "effective_config", "log_defaults")

log = logging.getLogger(__name__)
DEFAULT_ENTITY = ""  # Kafka's <default> broker entity (kafka-configs --entity-default)
# (the config in force, the broker-level topic config defaults) -> apply them
Apply = Callable[[BrokerConfig, Mapping[str, object]], Awaitable[None]]


def effective_config(static: BrokerConfig, default: Mapping[str, str], mine: Mapping[str, str]) -> BrokerConfig:
    """static with the dynamic values of eosbroker's properties laid over it (mine over default)."""
    values: FieldValues = {}
    for key, raw in {**default, **mine}.items():
        field = PROPERTY_FIELDS.get(key)
        spec: Spec | None = BrokerConfig.__dataclass_fields__[field].metadata.get("kafka") if field else None
        if field is None or spec is None:
            continue
        try:
            values[field] = spec.parse(key, raw)
        except ConfigError as exc:  # validated when set: only a hand-edited store gets here
            log.warning("ignoring the dynamic broker config %s: %s", key, exc)
    if values.get("log_retention_ms", 0) < 0:
        values["log_retention_ms"] = -1  # Kafka: any negative retention is unlimited
    return dataclasses.replace(static, **values)


def log_defaults(config: BrokerConfig, dynamic: Mapping[str, str] | None = None) -> dict[str, object]:
    """Broker-level defaults of topic configs, keyed by topic config name: the broker's property,
    or the dynamic value of a broker config eosbroker has no property for (log.cleanup.policy...)."""
    out: dict[str, object] = {}
    for topic_key, broker_key in TOPIC_CONFIG_DEFAULTS_FROM_BROKER.items():
        name = PROPERTY_FIELDS.get(broker_key)
        if name is not None:
            out[topic_key] = getattr(config, name)
        elif dynamic and broker_key in dynamic:
            out[topic_key] = dynamic[broker_key]
    return out


class DynamicBrokerConfig:
    """This broker's view of the dynamic configs; apply is awaited after every change."""

    def __init__(self, static: BrokerConfig, store: BrokerConfigStore, apply: Apply) -> None:
        self.static = static
        self.store = store
        self._apply = apply
        self._applying = asyncio.Lock()
        self._altering = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        store.add_listener(self._changed)

    @property
    def entity(self) -> str:
        return str(self.static.node_id)

    def layers(self) -> tuple[Mapping[str, str], Mapping[str, str]]:
        """(this broker's dynamic configs, the cluster default's)."""
        return self.store.configs(self.entity), self.store.configs(DEFAULT_ENTITY)

    def merged(self) -> dict[str, str]:
        mine, default = self.layers()
        return {**default, **mine}

    def effective(self) -> BrokerConfig:
        mine, default = self.layers()
        return effective_config(self.static, default, mine)

    async def alter(self, entity: str, compute: Callable[[Mapping[str, str]], Mapping[str, str]],
                    validate_only: bool) -> None:
        """Make compute(the entity's dynamic set) its whole new set (KafkaError if Kafka would
        refuse it). One change at a time on this broker, so concurrent incremental changes all
        count (in cluster mode, two brokers changing one entity at once: the last one wins)."""
        async with self._altering:
            configs = compute(self.store.configs(entity))
            validate_dynamic(configs, per_broker=entity != DEFAULT_ENTITY)
            mine, default = self.layers()
            after = {**configs, **mine} if entity == DEFAULT_ENTITY else {**default, **configs}
            validate_thread_counts({**default, **mine}, after, self.effective().log_cleaner_threads)
            if validate_only or dict(configs) == dict(self.store.configs(entity)):
                return
            await self.store.replace(entity, configs)
        await self.apply()  # the next request already sees it

    def group_configs(self, group_id: str) -> Mapping[str, str]:
        """A group's own configs (broker/group_configs.py), kept in the same store."""
        return self.store.configs(group_entity(group_id))

    def group_ids(self) -> list[str]:
        """The groups with configs of their own."""
        prefix = group_entity("")
        return [e[len(prefix):] for e in self.store.entities() if e.startswith(prefix)]

    async def alter_group(self, group_id: str, compute: Callable[[Mapping[str, str]], Mapping[str, str]],
                          validate_only: bool) -> None:
        """Make compute(the group's own configs) its new set; compute validates (KafkaError)."""
        entity = group_entity(group_id)
        async with self._altering:
            configs = compute(self.store.configs(entity))
            if not validate_only and dict(configs) != dict(self.store.configs(entity)):
                await self.store.replace(entity, configs)

    async def apply(self) -> None:
        async with self._applying:
            config = self.effective()
            await self._apply(config, log_defaults(config, self.merged()))

    def _changed(self) -> None:
        # From the store (a change through this or another broker): applied on the loop, in order.
        task = asyncio.get_running_loop().create_task(self._apply_logged())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _apply_logged(self) -> None:
        try:
            await self.apply()
        except Exception:
            log.exception("cannot apply the changed dynamic broker configs")

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
