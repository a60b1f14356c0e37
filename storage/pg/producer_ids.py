"""Producer-id blocks for the whole cluster (docs/cluster.md): a counter row in cluster_meta.

Every broker hands out producer ids (an idempotent producer asks any broker), so no two may ever
hand out the same one; Kafka's controller answers AllocateProducerIds for that. Here one
statement takes a block: the row's value is the first id nobody holds yet, and the UPDATE that
moves it on returns where the block starts. PostgreSQL's row lock serialises brokers taking blocks
at once, and the commit makes the block durable before any id of it is used. A crash after taking
a block only skips its ids.
"""

from __future__ import annotations

from typing import Final

import asyncpg  # type: ignore[import-untyped]

from protocol.errors import ErrorCode, KafkaError

from .pool import Pool, lasting, within

__all__ = ("PgProducerIdBlocks",)


_KEY: Final = "producer.id.next"
_HONOUR: Final = """
    INSERT INTO cluster_meta AS m (key, value) VALUES ($1, $2::bigint::text)
    ON CONFLICT (key) DO UPDATE SET value = greatest(m.value::bigint, $2::bigint)::text
"""
_TAKE: Final = """
    INSERT INTO cluster_meta AS m (key, value) VALUES ($1, $2::bigint::text)
    ON CONFLICT (key) DO UPDATE SET value = (m.value::bigint + $2::bigint)::text
    RETURNING value::bigint - $2::bigint
"""


class PgProducerIdBlocks:
    """storage/api.py's ProducerIdBlockSource over the cluster's database."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        # Seconds a request waits for a block (cluster mode: one lease, so a broker cut off from the
        # database answers by then and the producer asks another; None: the statement timeout).
        self.bound_s: float | None = None

    async def honour(self, next_id: int) -> None:
        await self.pool.execute(_HONOUR, _KEY, next_id)

    async def allocate_producer_ids(self, count: int) -> int:
        if count < 1:
            raise ValueError(f"a producer-id block holds at least one id, not {count}")
        try:
            first: int = await within(self.pool.fetchval(_TAKE, _KEY, count), lasting(self.bound_s))
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            # Kafka's answer while no block can be had (its controller unreachable): retriable,
            # the producer asks again.
            raise KafkaError(ErrorCode.coordinator_load_in_progress,
                             f"no producer-id block: the cluster database did not answer ({exc!r})") from exc
        return first
