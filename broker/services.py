"""The services the broker runs beside its connections (the coordinators), in start order."""

from __future__ import annotations

import dataclasses
import socket
from typing import Protocol

from coordinator.group.config import GroupConfig
from coordinator.group.consumer_heartbeat import ConsumerGroupConfig
from coordinator.group.coordinator import GroupCoordinator
from coordinator.share.coordinator import ShareCoordinator
from coordinator.share.dead_letters import DeadLetterSettings
from coordinator.share.partitions import ShareGroupSettings
from coordinator.share.state_shards import ShareStateShards
from coordinator.transaction.coordinator import TransactionCoordinator, TxnCoordinatorConfig
from coordinator.transaction.lso_monitor import LsoMonitor
from storage.api import TopicPartition

from .features import FeatureLevelWatcher
from .group_configs import consumer_overrides, share_settings
from .inter_broker import InterBrokerClient, TxnMarkerChannel
from .share_state_admin import ShareStateAdminClient
from .share_state_client import RemoteShareState
from .state import BrokerState


class Service(Protocol):
    """What the broker starts after the backend joins and stops in reverse order at shutdown."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class InterBrokerService:
    """Closes the inter-broker connections at shutdown (after the coordinators that use them)."""

    def __init__(self, client: InterBrokerClient) -> None:
        self.client = client

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        await self.client.close()


def transaction_coordinator(state: BrokerState) -> TransactionCoordinator:
    c = state.config
    config = TxnCoordinatorConfig(
        num_partitions=c.transaction_state_log_num_partitions,
        max_timeout_ms=c.transaction_max_timeout_ms,
        transactional_id_expiration_ms=c.transactional_id_expiration_ms,
        abort_timed_out_interval_ms=c.transaction_abort_timed_out_transaction_cleanup_interval_ms,
        remove_expired_interval_ms=c.transaction_remove_expired_transaction_cleanup_interval_ms,
        offsets_num_partitions=c.offsets_topic_num_partitions,
        segment_bytes=c.transaction_state_log_segment_bytes,
    )
    client = state.inter_broker
    assert state.producer_id_blocks is not None, "server.py gives every broker a producer-id block source"
    coordinator = TransactionCoordinator(
        state.logs, config, group=lambda: state.group_coordinator, cluster=state.cluster,
        producer_id_blocks=state.producer_id_blocks,
        remote_markers=None if client is None else TxnMarkerChannel(client),
        transaction_version=lambda: state.features.level("transaction.version"))
    state.txn_coordinator = coordinator
    return coordinator


def group_coordinator(state: BrokerState) -> GroupCoordinator:
    c = state.config
    config = GroupConfig(
        min_session_timeout_ms=c.group_min_session_timeout_ms,
        max_session_timeout_ms=c.group_max_session_timeout_ms,
        initial_rebalance_delay_ms=c.group_initial_rebalance_delay_ms,
        max_size=c.group_max_size,
        offsets_retention_ms=c.offsets_retention_minutes * 60_000,
        offsets_retention_check_interval_ms=c.offsets_retention_check_interval_ms,
        offset_metadata_max_bytes=c.offset_metadata_max_bytes,
        offsets_topic_num_partitions=c.offsets_topic_num_partitions,
        offsets_topic_segment_bytes=c.offsets_topic_segment_bytes,
    )
    consumer = ConsumerGroupConfig(
        session_timeout_ms=c.group_consumer_session_timeout_ms,
        heartbeat_interval_ms=c.group_consumer_heartbeat_interval_ms,
        assignors=tuple(c.group_consumer_assignors.split(",")),
        max_size=c.group_consumer_max_size,
        migration_policy=c.group_consumer_migration_policy,
    )
    coordinator = GroupCoordinator(state.logs, config, consumer_config=consumer, cluster=state.cluster)

    def group_overrides(group_id: str) -> dict[str, int]:  # the dynamic configs load after the coordinator
        dynamic = state.dynamic_config
        return consumer_overrides(dynamic.group_configs(group_id)) if dynamic is not None else {}

    coordinator.group_overrides = group_overrides
    state.group_coordinator = coordinator
    return coordinator


def share_coordinator(state: BrokerState) -> ShareCoordinator:
    """Share groups. In cluster mode the share-partitions of a partition live at its leader, their
    states at the share coordinator of each key (ShareStateShards: the __share_group_state
    partitions this broker leads) and a group's membership at its group coordinator."""
    def settings(group_id: str) -> ShareGroupSettings:  # read at each use: group configs change at run time
        own = state.dynamic_config.group_configs(group_id) if state.dynamic_config is not None else {}
        settings = share_settings(own, state.config)
        if state.features.level("share.version") < 2:  # dead letters come with share.version 2
            settings = dataclasses.replace(settings, dlq_topic="")
        return settings

    def other_group_exists(group_id: str) -> bool:
        groups = getattr(state.group_coordinator, "groups", None)
        return groups is not None and group_id in groups

    def dead_letter_settings() -> DeadLetterSettings:  # the broker's, dynamic in Kafka
        c = state.config
        return DeadLetterSettings(c.errors_deadletterqueue_topic_name_prefix,
                                  c.errors_deadletterqueue_auto_create_topics_enable, c.num_partitions)

    def group_owner(group_id: str) -> None:  # the group coordinator's shard of the group is led here
        groups = state.group_coordinator
        if groups is not None and not state.cluster.leads_everything:
            groups.shards.check(groups.partition_for(group_id).partition, group_id)

    def group_log(group_id: str) -> TopicPartition:  # where the group's membership is persisted
        assert state.group_coordinator is not None
        return state.group_coordinator.partition_for(group_id)

    c = state.config
    store, admin = None, None
    client = state.inter_broker
    if not state.cluster.leads_everything and client is not None:
        shards = state.share_state_shards = ShareStateShards(state.logs, c.share_coordinator_state_topic_num_partitions)
        store = RemoteShareState(state.cluster, client, shards)
        admin = ShareStateAdminClient(state.cluster, client, shards)
    coordinator = ShareCoordinator(state.logs, settings, other_group_exists=other_group_exists,
                                   dead_letter_settings=dead_letter_settings, store=store, admin=admin,
                                   group_owner=group_owner, group_log=group_log,
                                   state_topic_partitions=c.share_coordinator_state_topic_num_partitions,
                                   max_sessions=c.group_share_max_share_sessions, max_group_size=c.group_share_max_size)
    state.share_coordinator = coordinator
    return coordinator


class ShareClusterService:
    """Cluster mode: the share coordinator shards and the share-partitions follow leadership."""

    def __init__(self, state: BrokerState) -> None:
        self.state = state

    async def start(self) -> None:
        shards, coordinator = self.state.share_state_shards, self.state.share_coordinator
        if shards is not None and coordinator is not None:
            self.state.cluster.add_listener(shards)
            self.state.cluster.add_listener(coordinator)

    async def stop(self) -> None:
        return None


def lso_monitor(state: BrokerState) -> LsoMonitor:
    def bootstrap() -> str:  # read when a warning is due: the port is known only once bound
        host, port = state.config.advertised
        return f"{host or socket.getfqdn()}:{port}"

    return LsoMonitor(state.logs, state.config.transaction_lso_warning_threshold_ms, bootstrap,
                      coordinator=lambda: state.txn_coordinator)


def inter_broker(state: BrokerState) -> list[Service]:
    """The client the transaction coordinator sends markers to other leaders with (where other
    brokers lead partitions)."""
    if state.cluster.leads_everything:
        return []
    client = InterBrokerClient(state.cluster, client_id=f"eosbroker-{state.node_id}",
                               request_timeout_ms=state.config.request_timeout_ms,
                               security=state.inter_broker_security)
    state.inter_broker = client
    return [InterBrokerService(client)]


def feature_levels(state: BrokerState) -> list[Service]:
    """Cluster mode: follow the cluster's finalized feature levels (broker/features.py)."""
    if state.features.shared is None:
        return []
    return [FeatureLevelWatcher(state.features, state.config.cluster_lease_ms / 4000)]


def build_services(state: BrokerState) -> list[Service]:
    return [*inter_broker(state), *feature_levels(state), group_coordinator(state), transaction_coordinator(state),
            share_coordinator(state), ShareClusterService(state), lso_monitor(state)]
