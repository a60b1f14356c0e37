"""Shared builders for the group coordinator's pure tests (no event loop, no clock)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from coordinator.group.config import GroupConfig
from coordinator.group.member import JoinGroupResult, JoinParams, Outcome, SyncGroupResult, SyncParams
from coordinator.group.metadata import GroupMetadata

NO_DELAY = GroupConfig(initial_rebalance_delay_ms=0)
SESSION = 10_000
REBALANCE = 30_000


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0: version, topics, null user data."""
    out = bytearray(b"\x00\x00") + len(topics).to_bytes(4, "big")
    for t in topics:
        out += len(t).to_bytes(2, "big") + t.encode()
    return bytes(out + b"\xff\xff\xff\xff")


def new_group(config: GroupConfig = NO_DELAY, group_id: str = "g") -> GroupMetadata:
    counter = itertools.count(1)
    return GroupMetadata(group_id, config, new_member_id=lambda cid: f"{cid}-{next(counter)}")


def params(
    member_id: str = "",
    *,
    instance: str | None = None,
    protocols: Sequence[tuple[str, bytes]] = (("range", subscription("t")),),
    protocol_type: str = "consumer",
    session: int = SESSION,
    rebalance: int = REBALANCE,
    require_known: bool = False,
    client_id: str = "c",
    skip_assignment: bool = False,
) -> JoinParams:
    return JoinParams(
        member_id=member_id,
        group_instance_id=instance,
        client_id=client_id,
        client_host="/127.0.0.1",
        rebalance_timeout_ms=rebalance,
        session_timeout_ms=session,
        protocol_type=protocol_type,
        protocols=tuple(protocols),
        require_known_member_id=require_known,
        supports_skip_assignment=skip_assignment,
    )


def replies(outcome: Outcome) -> dict[object, JoinGroupResult | SyncGroupResult]:
    out: dict[object, JoinGroupResult | SyncGroupResult] = {}
    for waiter, result in outcome.replies:
        assert waiter not in out, f"two replies for {waiter!r}"
        out[waiter] = result
    return out


def join_result(outcome: Outcome, waiter: object) -> JoinGroupResult:
    result = replies(outcome)[waiter]
    assert isinstance(result, JoinGroupResult)
    return result


def sync_result(outcome: Outcome, waiter: object) -> SyncGroupResult:
    result = replies(outcome)[waiter]
    assert isinstance(result, SyncGroupResult)
    return result


def stable_group(*clients: str, config: GroupConfig = NO_DELAY) -> tuple[GroupMetadata, list[str]]:
    """A Stable group whose members joined one rebalance, in order; the first is the leader."""
    group = new_group(config)
    waiters = []
    for cid in clients:
        group.join(params(client_id=cid), 0, f"join-{cid}")
        waiters.append(f"join-{cid}")
    # The first member completed a generation alone; make everyone rejoin together.
    ids = list(group.members)
    outcome = Outcome()
    for mid in ids:
        if not group.members[mid].is_awaiting_join:
            outcome = group.join(params(mid, client_id=mid.split("-")[0]), 0, f"rejoin-{mid}")
    assert group.state.value == "CompletingRebalance", group.state
    leader = group.leader_id
    assert leader is not None
    assignments = {mid: f"assignment-{mid}".encode() for mid in ids}
    for mid in ids:
        if mid != leader:
            group.sync(SyncParams(member_id=mid, generation_id=group.generation_id), now_ms=0, waiter=f"sync-{mid}")
    group.sync(SyncParams(member_id=leader, generation_id=group.generation_id, assignments=assignments),
               now_ms=0, waiter=f"sync-{leader}")
    assert group.state.value == "Stable"
    del outcome
    return group, [leader] + [m for m in ids if m != leader]


def rebalanced_pair() -> tuple[GroupMetadata, tuple[str, str]]:
    """stable_group("a", "b") after both members rejoined (waiters "wa", "wb"): the new
    generation is COMPLETING_REBALANCE, nobody has synced yet; returns (leader, follower)."""
    group, (leader, follower) = stable_group("a", "b")
    group.join(params(leader, client_id="a"), 0, "wa")
    group.join(params(follower, client_id="b"), 0, "wb")
    return group, (leader, follower)
