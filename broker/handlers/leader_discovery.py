"""KIP-951 leader discovery: a partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH
names its current leader and epoch, and the response carries that leader's address on the
client's listener, so the client moves to it without a Metadata round trip (Kafka's
KafkaApis.getCurrentLeader; Fetch v16+)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from protocol.errors import ErrorCode
from protocol.fast_responses import NodeEndpoint
from storage.api import TopicPartition

from ..handler import RequestContext
from .metadata import live_brokers

__all__ = ("LEADER_ERRORS", "current_leader", "leader_endpoints")

LEADER_ERRORS: Final = frozenset({ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch})


def current_leader(ctx: RequestContext, tp: TopicPartition) -> tuple[int, int]:
    """(leader id, leader epoch) as this broker last saw them; (-1, -1) for a partition the
    cluster does not have."""
    leader = ctx.broker.cluster.leader(tp)
    return (-1, -1) if leader is None else (leader.leader, leader.leader_epoch)


def leader_endpoints(ctx: RequestContext, leaders: Iterable[int]) -> list[NodeEndpoint]:
    """The live brokers among leaders, as reached over the client's listener (a leader that is
    down or has no such listener is left out, as Kafka's getAliveBrokerNode leaves it)."""
    wanted = set(leaders)
    if not wanted:
        return []
    return [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
            for b in live_brokers(ctx) if b.node_id in wanted]
