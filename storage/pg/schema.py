"""The cluster's schema as versioned migrations, applied at start-up under an advisory lock.

Each migration runs once, in order, inside one transaction with its row in schema_migrations, so
brokers of one version can be rolled one at a time: the first to start applies what is missing,
the others find it applied. A broker refuses a database whose schema is newer than it knows.
"""

from __future__ import annotations

from typing import Final

from .pool import Connection

__all__ = ("MIGRATIONS", "SCHEMA_LOCK_ID", "SchemaTooNewError", "migrate")

# pg_advisory_xact_lock key: "eosbroker" schema lock (any fixed 64-bit value; it only has to be
# the same for every broker).
SCHEMA_LOCK_ID: Final = 0x656F7362726F6B72

MIGRATIONS: Final[tuple[str, ...]] = (
    # 1: the whole first schema (docs/cluster.md explains each table).
    """
    CREATE TABLE cluster_meta (
        key   text PRIMARY KEY,
        value text NOT NULL
    );
    CREATE TABLE brokers (
        node_id          int PRIMARY KEY,
        host             text NOT NULL,
        port             int NOT NULL,
        rack             text,
        incarnation      uuid NOT NULL,
        registered_at    timestamptz NOT NULL DEFAULT now(),
        lease_expires_at timestamptz NOT NULL
    );
    CREATE TABLE topics (
        name               text PRIMARY KEY,
        topic_id           uuid NOT NULL UNIQUE,
        partitions         int NOT NULL,
        replication_factor smallint NOT NULL DEFAULT 1,
        configs            jsonb NOT NULL DEFAULT '{}',
        created_at         timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE partitions (
        topic_id         uuid NOT NULL REFERENCES topics (topic_id) ON DELETE CASCADE,
        partition        int NOT NULL,
        leader           int,
        leader_epoch     int NOT NULL DEFAULT 0,
        next_offset      bigint NOT NULL DEFAULT 0,
        log_start_offset bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (topic_id, partition)
    );
    CREATE TABLE batches (
        topic_id      uuid NOT NULL,
        partition     int NOT NULL,
        base_offset   bigint NOT NULL,
        last_offset   bigint NOT NULL,
        max_timestamp bigint NOT NULL,
        data          bytea NOT NULL,
        PRIMARY KEY (topic_id, partition, base_offset)
    );
    CREATE TABLE producer_snapshots (
        topic_id   uuid NOT NULL,
        partition  int NOT NULL,
        end_offset bigint NOT NULL,
        data       bytea NOT NULL,
        PRIMARY KEY (topic_id, partition, end_offset)
    );
    CREATE TABLE aborted_txns (
        topic_id           uuid NOT NULL,
        partition          int NOT NULL,
        producer_id        bigint NOT NULL,
        first_offset       bigint NOT NULL,
        last_offset        bigint NOT NULL,
        last_stable_offset bigint NOT NULL,
        PRIMARY KEY (topic_id, partition, last_offset)
    );
    """,
    # 2: the log cleaner's checkpoint per partition (storage/pg/cleaning.py): where its next pass starts.
    """
    ALTER TABLE partitions ADD COLUMN cleaner_checkpoint bigint NOT NULL DEFAULT 0;
    """,
    # 3: the finalized feature levels (storage/pg/feature_levels.py), shared by every broker.
    """
    CREATE TABLE finalized_features (
        name  text PRIMARY KEY,
        level smallint NOT NULL,
        epoch bigint NOT NULL
    );
    """,
    # 4: every advertised listener of a broker, [[name, host, port], ...] (issue 12): Metadata
    # answers each client with the brokers' endpoints on the listener it came in on, and brokers
    # reach each other on inter.broker.listener.name. Rows of older brokers keep '[]'.
    """
    ALTER TABLE brokers ADD COLUMN listeners jsonb NOT NULL DEFAULT '[]';
    """,
    # 5: SCRAM credentials and ACLs, shared by every broker (storage/pg/security_store.py); a
    # change bumps cluster_meta's security.version, which every broker polls. Never a password:
    # the salt, StoredKey, ServerKey and iterations, as Kafka's UserScramCredentialRecord.
    """
    CREATE TABLE scram_credentials (
        username   text NOT NULL,
        mechanism  text NOT NULL,
        salt       bytea NOT NULL,
        stored_key bytea NOT NULL,
        server_key bytea NOT NULL,
        iterations int NOT NULL,
        PRIMARY KEY (username, mechanism)
    );
    CREATE TABLE acls (
        binding text PRIMARY KEY
    );
    INSERT INTO cluster_meta (key, value) VALUES ('security.version', '0') ON CONFLICT (key) DO NOTHING;
    """,
    # 6: dynamic broker configs (storage/pg/broker_config_store.py): entity "" is the cluster default,
    # any other a broker's id; a change bumps cluster_meta's broker_configs.version, which every
    # broker polls.
    """
    CREATE TABLE broker_configs (
        entity text NOT NULL,
        name   text NOT NULL,
        value  text NOT NULL,
        PRIMARY KEY (entity, name)
    );
    INSERT INTO cluster_meta (key, value) VALUES ('broker_configs.version', '0') ON CONFLICT (key) DO NOTHING;
    """,
    # 7: record data in an object store (cluster.object.store.url; storage/pg/object_commit.py): each
    # flush is one object, each partition's batches in it one run (contiguous offsets and bytes);
    # flush_objects lists the objects a commit referenced (an object in the store and not here, older
    # than a grace period, is an orphan of a failed or fenced flush). A database already holding
    # rows keeps them: cluster_meta's record.storage says which kind of storage the cluster uses.
    """
    CREATE TABLE batch_runs (
        topic_id      uuid NOT NULL,
        partition     int NOT NULL,
        base_offset   bigint NOT NULL,
        last_offset   bigint NOT NULL,
        max_timestamp bigint NOT NULL,
        object_key    text NOT NULL,
        byte_start    bigint NOT NULL,
        byte_length   int NOT NULL,
        PRIMARY KEY (topic_id, partition, base_offset)
    );
    CREATE INDEX batch_runs_object ON batch_runs (object_key);
    CREATE TABLE flush_objects (
        object_key text PRIMARY KEY,
        node_id    int NOT NULL,
        size       bigint NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
    );
    INSERT INTO cluster_meta (key, value) SELECT 'record.storage', 'rows' WHERE EXISTS (SELECT 1 FROM batches)
    ON CONFLICT (key) DO NOTHING;
    """,
    # 8: when the collector (storage/pg/object_gc.py) first found no run reading an object (archiving,
    # the cleaner, retention): it is deleted a grace period after that, not after its creation, so a
    # fetch that read the old rows just before they changed still finds its bytes.
    """
    ALTER TABLE flush_objects ADD COLUMN unreferenced_since timestamptz;
    """,
    # 9: a flush of the broker's own records only (transaction markers, a coordinator's state) stores
    # no object: its runs' bytes are held in their rows (object_key '', storage/pg/object_commit.py)
    # until the archiver moves them into an object.
    """
    ALTER TABLE batch_runs ADD COLUMN data bytea;
    """,
)


class SchemaTooNewError(RuntimeError):
    """The database was migrated by a newer broker version than this one."""


async def migrate(conn: Connection) -> int:
    """Apply every missing migration; returns the schema version. conn is an asyncpg connection."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", SCHEMA_LOCK_ID)
        await conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                           "version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        current = await conn.fetchval("SELECT coalesce(max(version), 0) FROM schema_migrations")
        if current > len(MIGRATIONS):
            raise SchemaTooNewError(f"the cluster database has schema version {current}; this broker knows "
                                    f"versions up to {len(MIGRATIONS)}: upgrade the broker")
        for version in range(current + 1, len(MIGRATIONS) + 1):
            await conn.execute(MIGRATIONS[version - 1])
            await conn.execute("INSERT INTO schema_migrations (version) VALUES ($1)", version)
        return len(MIGRATIONS)
