"""The broker's configuration, declared once from Kafka's own property names (BrokerConfig).

Each field that a property sets carries its Kafka ConfigDef entry (type and validator, looked up in
Kafka's ServerConfigs, ServerLogConfigs, LogConfig, SocketServerConfigs, GroupCoordinatorConfig,
TransactionLogConfig and TransactionStateManagerConfig), so a value Kafka would refuse is refused
with Kafka's message, before the broker touches the disk. broker/config.py reads and checks them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from .config_def import BOOLEAN, DOUBLE, INT, LONG, PASSWORD, STRING, WEEK_MS, prop
from .listeners import PORT_MAX, SECURITY_PROTOCOLS, Listener

__all__ = ("BrokerConfig", "PROPERTY_FIELDS")


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerConfig:
    # Where to listen and what to advertise: resolved from listeners / advertised.listeners and the
    # command line by build_config; port 0 asks for an ephemeral port (the tests use it).
    host: str = "127.0.0.1"
    port: int = 9092
    advertised_host: str | None = None
    advertised_port: int | None = None
    listeners: str | None = prop(None, STRING)
    # Every client listener, resolved by build_config; the first is the one host, port and
    # advertised_* describe (and the one --host/--port override). Empty: that one, PLAINTEXT.
    listener_endpoints: tuple[Listener, ...] = ()
    advertised_listeners: str | None = prop(None, STRING)
    # KRaft refuses a negative node.id ("Missing configuration `node.id`").
    node_id: int = prop(1, INT, at_least=0)
    log_dirs: str = prop("./data", STRING)
    num_partitions: int = prop(1, INT, at_least=1)
    default_replication_factor: int = prop(1, INT)
    auto_create_topics_enable: bool = prop(True, BOOLEAN)
    delete_topic_enable: bool = prop(True, BOOLEAN)
    # LegacyRecord.RECORD_OVERHEAD_V0, the bound of Kafka 3.x; the tests roll 4 KiB segments.
    log_segment_bytes: int = prop(1 << 30, INT, at_least=14)
    # The effective retention: build_config resolves log.retention.ms > .minutes > .hours into it.
    log_retention_ms: int = prop(WEEK_MS, LONG)
    log_retention_minutes: int | None = prop(None, INT)
    log_retention_hours: int = prop(168, INT)
    log_retention_bytes: int = prop(-1, LONG)
    log_retention_check_interval_ms: int = prop(300_000, LONG, at_least=1)
    # The effective roll time: log.roll.ms > log.roll.hours.
    log_roll_ms: int = prop(WEEK_MS, LONG)
    log_roll_hours: int = prop(168, INT, at_least=1)
    log_flush_interval_messages: int = prop((1 << 63) - 1, LONG, at_least=1)
    log_flush_interval_ms: int | None = prop(None, LONG)
    log_index_interval_bytes: int = prop(4096, INT, at_least=0)
    # The log cleaner (storage/cleaner/): Kafka's CleanerConfig and the cleaner's topic-config defaults.
    log_cleaner_enable: bool = prop(True, BOOLEAN)
    log_cleaner_backoff_ms: int = prop(15000, LONG, at_least=0)
    log_cleaner_dedupe_buffer_size: int = prop(134217728, LONG)
    log_cleaner_threads: int = prop(1, INT, at_least=0)
    # Kafka's default, Double.MAX_VALUE, is no limit; a rate below 1 byte/s would stall a pass.
    log_cleaner_io_max_bytes_per_second: float = prop(1.7976931348623157e308, DOUBLE, at_least=1)
    log_cleaner_io_buffer_size: int = prop(524288, INT, at_least=0)
    log_cleaner_io_buffer_load_factor: float = prop(0.9, DOUBLE, at_least=0, at_most=1)
    log_cleaner_delete_retention_ms: int = prop(86400000, LONG, at_least=0)
    log_cleaner_min_cleanable_ratio: float = prop(0.5, DOUBLE, at_least=0, at_most=1)
    log_cleaner_min_compaction_lag_ms: int = prop(0, LONG, at_least=0)
    log_cleaner_max_compaction_lag_ms: int = prop((1 << 63) - 1, LONG, at_least=1)
    log_message_timestamp_type: str = prop("CreateTime", STRING, choices=("CreateTime", "LogAppendTime"))
    message_max_bytes: int = prop(1048588, INT, at_least=0)
    socket_request_max_bytes: int = prop(104857600, INT, at_least=1)
    queued_max_requests: int = prop(500, INT, at_least=1)
    # Broker-wide bytes of requests being received or waiting (Kafka's -1, unbounded, is accepted;
    # the default admits two requests of the default socket.request.max.bytes: broker/memory_pool.py).
    queued_max_request_bytes: int = prop(209715200, LONG, at_least=-1)
    connections_max_idle_ms: int = prop(600000, LONG, at_least=1)
    # Kafka's default backlog is 50: thousands of clients reconnecting at once (a broker restart)
    # would overflow it and wait out SYN retransmits, so ours is 1024 (the kernel caps it at
    # net.core.somaxconn).
    socket_listen_backlog_size: int = prop(1024, INT, at_least=1)
    # As Kafka's SocketServer: SO_SNDBUF of each accepted connection and SO_RCVBUF of the listening
    # socket (connections inherit it, so the window scale is agreed with it). Kafka's default is
    # 102400; ours is -1, the OS's autotuned buffers, which a fixed 100 KiB would cap on links
    # with a long round trip (on loopback k1-64k measured the same either way).
    socket_send_buffer_bytes: int = prop(-1, INT, at_least=-1)
    socket_receive_buffer_bytes: int = prop(-1, INT, at_least=-1)
    # Not a Kafka property: how long one request frame may take to arrive once its first byte has
    # (a peer that trickles bytes is never idle, so connections.max.idle.ms alone would not end it).
    socket_request_receive_timeout_ms: int = prop(60000, LONG, at_least=1)
    # How long a request to another broker of the cluster may go unanswered (broker/inter_broker.py).
    request_timeout_ms: int = prop(30000, INT, at_least=0)
    offsets_topic_num_partitions: int = prop(50, INT, at_least=1)
    offsets_topic_segment_bytes: int = prop(104857600, INT, at_least=1)
    offsets_retention_minutes: int = prop(10080, INT, at_least=1)
    offsets_retention_check_interval_ms: int = prop(600000, LONG, at_least=1)
    offset_metadata_max_bytes: int = prop(4096, INT)
    group_initial_rebalance_delay_ms: int = prop(3000, INT)
    group_min_session_timeout_ms: int = prop(6000, INT)
    group_max_session_timeout_ms: int = prop(1800000, INT)
    group_max_size: int = prop((1 << 31) - 1, INT, at_least=1)
    # The consumer group protocol (KIP-848), under Kafka's GroupCoordinatorConfig keys.
    group_consumer_session_timeout_ms: int = prop(45000, INT, at_least=1)
    group_consumer_heartbeat_interval_ms: int = prop(5000, INT, at_least=1)
    # The range a group's own consumer.session.timeout.ms / consumer.heartbeat.interval.ms may
    # take (group configs, broker/group_configs.py).
    group_consumer_min_session_timeout_ms: int = prop(45000, INT, at_least=1)
    group_consumer_max_session_timeout_ms: int = prop(60000, INT, at_least=1)
    group_consumer_min_heartbeat_interval_ms: int = prop(5000, INT, at_least=1)
    group_consumer_max_heartbeat_interval_ms: int = prop(15000, INT, at_least=1)
    group_consumer_max_size: int = prop((1 << 31) - 1, INT, at_least=1)
    # Share groups (KIP-932, coordinator/share), under Kafka's ShareGroupConfig keys: the defaults
    # of the share.* group configs and the range a group's own value may take.
    group_share_record_lock_duration_ms: int = prop(30000, INT, at_least=1000, at_most=3600000)
    group_share_min_record_lock_duration_ms: int = prop(15000, INT, at_least=1000, at_most=30000)
    group_share_max_record_lock_duration_ms: int = prop(60000, INT, at_least=30000, at_most=3600000)
    group_share_delivery_count_limit: int = prop(5, INT, at_least=2, at_most=10)
    group_share_min_delivery_count_limit: int = prop(2, INT, at_least=2, at_most=5)
    group_share_max_delivery_count_limit: int = prop(10, INT, at_least=5, at_most=25)
    group_share_session_timeout_ms: int = prop(45000, INT, at_least=1)
    group_share_min_session_timeout_ms: int = prop(45000, INT, at_least=1)
    group_share_max_session_timeout_ms: int = prop(60000, INT, at_least=1)
    group_share_heartbeat_interval_ms: int = prop(5000, INT, at_least=1)
    group_share_min_heartbeat_interval_ms: int = prop(5000, INT, at_least=1)
    group_share_max_heartbeat_interval_ms: int = prop(15000, INT, at_least=1)
    group_share_partition_max_record_locks: int = prop(2000, INT, at_least=100, at_most=10000)
    group_share_max_size: int = prop(200, INT, at_least=1, at_most=1000)
    group_share_max_share_sessions: int = prop(2000, INT, at_least=1)
    share_coordinator_state_topic_num_partitions: int = prop(50, INT, at_least=1)
    # Dead-letter topics of share groups (KIP-1191, coordinator/share/dead_letters.py), Kafka's
    # GroupCoordinatorConfig keys: a missing one is created only if enabled; "" allows any name.
    errors_deadletterqueue_auto_create_topics_enable: bool = prop(False, BOOLEAN)
    errors_deadletterqueue_topic_name_prefix: str = prop("dlq.", STRING)
    # Connection limits (broker/connection_limits.py), Kafka's SocketServer configs.
    max_connections_per_ip: int = prop((1 << 31) - 1, INT, at_least=0)
    max_connections_per_ip_overrides: str = prop("", STRING)
    max_connections: int = prop((1 << 31) - 1, INT, at_least=0)
    max_connection_creation_rate: int = prop((1 << 31) - 1, INT, at_least=0)
    # Client quotas (broker/quotas): a client's byte rate is measured over this many windows of this size.
    quota_window_num: int = prop(11, INT, at_least=1)
    quota_window_size_seconds: int = prop(1, INT, at_least=1)
    # KIP-227: how many incremental fetch sessions the broker keeps (0: none, every fetch is full).
    max_incremental_fetch_session_cache_slots: int = prop(1000, INT, at_least=0)
    # A comma-separated list (Kafka's LIST type): the server-side assignors a member may name in
    # group.remote.assignor; the first is the default. Only Kafka's built-in two exist here.
    group_consumer_assignors: str = prop("uniform,range", STRING)
    # Which way a group with members may change protocol online (KIP-848 migration,
    # coordinator/group/migration.py); Kafka's default is bidirectional.
    group_consumer_migration_policy: str = prop("bidirectional", STRING,
                                                choices=("disabled", "upgrade", "downgrade", "bidirectional"))
    transaction_state_log_num_partitions: int = prop(50, INT, at_least=1)
    transaction_state_log_segment_bytes: int = prop(104857600, INT, at_least=1)
    transaction_max_timeout_ms: int = prop(900000, INT, at_least=1)
    # Transactions V2: how long a Produce v12+ that finds the last transaction's markers still being
    # written (CONCURRENT_TRANSACTIONS) waits, retrying the add, before the client is told.
    add_partitions_to_txn_retry_backoff_ms: int = prop(20, INT, at_least=1)
    add_partitions_to_txn_retry_backoff_max_ms: int = prop(100, INT, at_least=0)
    transactional_id_expiration_ms: int = prop(604800000, INT, at_least=1)
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = prop(10000, INT, at_least=1)
    transaction_remove_expired_transaction_cleanup_interval_ms: int = prop(3600000, INT, at_least=1)
    # Not a Kafka property: how long one open transaction may hold a partition's last stable
    # offset back before the broker logs a warning that explains it (coordinator/transaction/lso_monitor.py).
    transaction_lso_warning_threshold_ms: int = prop(60000, LONG, at_least=1)
    # Not a broker property in Kafka (kafka-storage format --feature transaction.version=N sets it):
    # the finalized transaction.version of a data dir that UpdateFeatures never changed
    # (broker/features.py); 2 offers Transactions V2 to clients, 1 or 0 keeps them on V1.
    transaction_version: int = prop(2, INT, at_least=0, at_most=2)
    producer_id_expiration_ms: int = prop(86400000, INT, at_least=1)
    producer_id_expiration_check_interval_ms: int = prop(600000, INT, at_least=1)
    # Not a Kafka property (Kafka's kafka-storage format -t sets it): the cluster id to format an
    # empty data dir with; unset, the first start generates one. Either way it is kept in
    # meta.properties, and a later start with another cluster.id is refused.
    cluster_id: str | None = prop(None, STRING)
    # Not Kafka properties (Kafka exports JMX): the Prometheus endpoint, off unless a port is set
    # (0: any free port, logged at start-up); its host defaults to the broker's.
    metrics_port: int | None = prop(None, INT, at_least=0, at_most=PORT_MAX)
    metrics_host: str | None = prop(None, STRING)
    # Not Kafka properties: cluster mode (docs/cluster.md). With cluster.url (a PostgreSQL URL) every
    # broker given the same URL serves one cluster whose state lives in that database; unset, the
    # broker keeps its log in local segment files (the embedded default). cluster.lease.ms bounds how
    # long a dead broker's partitions and coordinators stay unavailable.
    cluster_url: str | None = prop(None, STRING)
    cluster_lease_ms: int = prop(10000, INT, at_least=1000)
    # Not Kafka properties: with cluster.url, record data may go to an object store instead of the
    # database's rows (docs/cluster.md): s3://BUCKET/PREFIX (credentials from AWS_ACCESS_KEY_ID /
    # AWS_SECRET_ACCESS_KEY; endpoint and region for a store other than AWS) or file:///DIR for
    # brokers on one machine. Appends of many partitions go in one object per flush, written after
    # cluster.object.flush.ms or once cluster.object.flush.bytes are buffered, whichever comes first.
    cluster_object_store_url: str | None = prop(None, STRING)
    cluster_object_store_endpoint: str | None = prop(None, STRING)
    cluster_object_store_region: str | None = prop(None, STRING)
    cluster_object_flush_ms: int = prop(10, INT, at_least=0, at_most=60000)
    cluster_object_flush_bytes: int = prop(4 << 20, INT, at_least=1)
    # How old an object no committed run reads must be before it is deleted: an orphan of a failed
    # flush, or one whose runs retention removed. Longer than any commit can take.
    cluster_object_orphan_grace_ms: int = prop(600000, INT, at_least=1000)
    # Archiving (storage/pg/object_archive.py): every interval each broker rewrites the small runs of
    # the partitions it leads into per-partition objects of up to archive.bytes, a group once it holds
    # archive.min.runs runs or is full; runs of a quarter of archive.bytes or more stay as they are.
    cluster_object_archive_bytes: int = prop(64 << 20, INT, at_least=1, at_most=1 << 30)
    cluster_object_archive_min_runs: int = prop(32, INT, at_least=2)
    cluster_object_archive_interval_ms: int = prop(10000, INT, at_least=100)
    # Not a Kafka property: how many broker processes one command starts and supervises
    # (broker/supervisor.py), a number or `auto` (the cores this process may run on).
    broker_processes: str = prop("1", STRING)
    # The authorizer (broker/authorizer): off when empty, as in Kafka; Kafka's two class names
    # select the same StandardAuthorizer rules. super.users is `;`-separated principals.
    authorizer_class_name: str = prop("", STRING)
    super_users: str = prop("", STRING)
    allow_everyone_if_no_acl_found: bool = prop(False, BOOLEAN)
    # Security (broker/security/), Kafka's names and defaults. Kafka's default keystore type is
    # JKS, which only Java reads: a listener that needs one says so at start-up. Each of these may
    # be set for one listener as listener.name.<listener>.<key>, which wins (listener_overrides).
    ssl_keystore_type: str = prop("JKS", STRING)
    ssl_keystore_location: str | None = prop(None, STRING)
    ssl_keystore_password: str | None = prop(None, PASSWORD)
    ssl_key_password: str | None = prop(None, PASSWORD)
    ssl_keystore_certificate_chain: str | None = prop(None, PASSWORD)
    ssl_keystore_key: str | None = prop(None, PASSWORD)
    ssl_truststore_type: str = prop("JKS", STRING)
    ssl_truststore_location: str | None = prop(None, STRING)
    ssl_truststore_password: str | None = prop(None, PASSWORD)
    ssl_truststore_certificates: str | None = prop(None, PASSWORD)
    ssl_client_auth: str = prop("none", STRING, choices=("required", "requested", "none"))
    ssl_enabled_protocols: str = prop("TLSv1.2,TLSv1.3", STRING)
    ssl_principal_mapping_rules: str = prop("DEFAULT", STRING)
    sasl_enabled_mechanisms: str = prop("GSSAPI", STRING)
    sasl_jaas_config: str | None = prop(None, PASSWORD)
    sasl_server_max_receive_size: int = prop(524288, INT)
    connections_max_reauth_ms: int = prop(0, LONG)
    # SASL/OAUTHBEARER (broker/security/oauthbearer.py), Kafka 4.4's SaslConfigs names and defaults.
    # The callback handler class is read only listener- and mechanism-prefixed, as in Kafka.
    sasl_server_callback_handler_class: str | None = prop(None, STRING)
    sasl_oauthbearer_jwks_endpoint_url: str | None = prop(None, STRING)
    sasl_oauthbearer_jwks_endpoint_refresh_ms: int = prop(3_600_000, LONG)
    sasl_oauthbearer_jwks_endpoint_retry_backoff_ms: int = prop(100, LONG)
    sasl_oauthbearer_jwks_endpoint_retry_backoff_max_ms: int = prop(10_000, LONG)
    sasl_oauthbearer_expected_audience: str = prop("", STRING)  # a comma-separated LIST
    sasl_oauthbearer_expected_issuer: str | None = prop(None, STRING)
    sasl_oauthbearer_allow_unverified_audience: bool = prop(False, BOOLEAN)
    sasl_oauthbearer_allow_unverified_issuer: bool = prop(False, BOOLEAN)
    sasl_oauthbearer_sub_claim_name: str = prop("sub", STRING)
    sasl_oauthbearer_scope_claim_name: str = prop("scope", STRING)
    sasl_oauthbearer_clock_skew_seconds: int = prop(30, INT)
    # The broker's own token, for OAUTHBEARER between brokers (broker/security/oauth_login.py).
    sasl_oauthbearer_token_endpoint_url: str | None = prop(None, STRING)
    sasl_oauthbearer_client_credentials_client_id: str | None = prop(None, STRING)
    sasl_oauthbearer_client_credentials_client_secret: str | None = prop(None, PASSWORD)
    sasl_oauthbearer_scope: str | None = prop(None, STRING)
    connection_failed_authentication_delay_ms: int = prop(100, INT, at_least=0)
    # The client side of TLS (inter-broker connections in cluster mode): https checks that the
    # peer's certificate names the host connected to, as Kafka's clients do; empty turns it off.
    ssl_endpoint_identification_algorithm: str = prop("https", STRING)
    # Cluster mode: how brokers reach each other (broker/security/inter_broker.py). Kafka's rules:
    # inter.broker.listener.name or security.inter.broker.protocol (whose listener is the one of
    # that name), never both; SASL with sasl.mechanism.inter.broker.protocol and the credentials
    # of that listener's listener.name.<l>.<mechanism>.sasl.jaas.config.
    inter_broker_listener_name: str | None = prop(None, STRING)
    security_inter_broker_protocol: str = prop("PLAINTEXT", STRING, choices=SECURITY_PROTOCOLS)
    sasl_mechanism_inter_broker_protocol: str = prop("GSSAPI", STRING)
    # listener.name.<listener>.<key> values as given (broker/security/settings.py reads them).
    listener_overrides: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, str] = field(default_factory=dict)
    # The properties given in server.properties or with --set (listeners and advertised.listeners
    # also when --host/--port or --advertised-* set them): DescribeConfigs names these
    # STATIC_BROKER_CONFIG and the rest DEFAULT_CONFIG, as Kafka does.
    static_keys: frozenset[str] = frozenset()

    @property
    def data_dir(self) -> Path:
        return Path(self.log_dirs)

    @property
    def processes(self) -> int:
        """broker.processes as a count (checked by build_config)."""
        if self.broker_processes.strip().lower() == "auto":
            return len(os.sched_getaffinity(0))
        return int(self.broker_processes)

    @property
    def super_user_principals(self) -> frozenset[str]:
        return frozenset(p.strip() for p in self.super_users.split(";") if p.strip())

    @property
    def advertised(self) -> tuple[str, int]:
        """What Metadata and FindCoordinator return for this node."""
        port = self.advertised_port if self.advertised_port is not None else self.port
        return self.advertised_host or self.host, port

    @property
    def client_listeners(self) -> tuple[Listener, ...]:
        if self.listener_endpoints:
            return self.listener_endpoints
        host, port = self.advertised
        return (Listener(name="PLAINTEXT", security_protocol="PLAINTEXT", host=self.host, port=self.port,
                         advertised_host=host, advertised_port=self.advertised_port),)

    def advertised_for(self, listener_name: str) -> tuple[str, int]:
        """What Metadata, FindCoordinator and DescribeCluster return to a client that came in on
        `listener_name`, as Kafka answers with the addresses of the request's listener."""
        for listener in self.listener_endpoints:
            if listener.name == listener_name:
                return listener.advertised
        return self.advertised

    def with_port(self, port: int) -> BrokerConfig:
        """The first listener bound to `port` (port 0 replaced by the port the system gave)."""
        first = self.client_listeners[0]
        return self.with_bound_ports({first.name: port})

    def with_bound_ports(self, ports: Mapping[str, int]) -> BrokerConfig:
        listeners = tuple(dataclasses.replace(listener, port=ports.get(listener.name, listener.port))
                          for listener in self.client_listeners)
        return dataclasses.replace(self, port=listeners[0].port, listener_endpoints=listeners)


_NOT_PROPERTIES: Final = frozenset({"host", "port", "advertised_host", "advertised_port", "listener_endpoints",
                                    "listener_overrides", "extra",
                                    "static_keys"})
# Kafka property name -> BrokerConfig field, for every field settable from properties.
PROPERTY_FIELDS: Mapping[str, str] = {
    f.name.replace("_", "."): f.name for f in dataclasses.fields(BrokerConfig) if f.name not in _NOT_PROPERTIES
}

