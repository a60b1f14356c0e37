import itertools

import pytest

from coordinator.group.state import (
    VALID_PREVIOUS_STATES,
    GroupState,
    IllegalStateTransition,
    transition_to,
)

S = GroupState

# Kafka's GroupMetadata.scala, validPreviousStates of each state.
KAFKA_TABLE = {
    S.EMPTY: {S.PREPARING_REBALANCE},
    S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
    S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
    S.STABLE: {S.COMPLETING_REBALANCE},
    S.DEAD: {S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD},
}


def test_table_is_kafkas() -> None:
    assert {k: set(v) for k, v in VALID_PREVIOUS_STATES.items()} == KAFKA_TABLE


@pytest.mark.parametrize(("current", "target"), list(itertools.product(S, S)))
def test_transition_to_allows_exactly_the_table(current: GroupState, target: GroupState) -> None:
    if current in KAFKA_TABLE[target]:
        assert transition_to(current, target, "g") is target
    else:
        with pytest.raises(IllegalStateTransition, match="'g'"):
            transition_to(current, target, "g")


def test_wire_names() -> None:
    assert [str(s) for s in S] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]
