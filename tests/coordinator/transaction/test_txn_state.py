import pytest

from coordinator.transaction.state import (
    VALID_PREVIOUS_STATES,
    IllegalTxnTransition,
    TxnState,
    check_transition,
)

S = TxnState
# Kafka's TransactionState.validPreviousStates, written out as (from, to) pairs.
KAFKA_EDGES = {
    (S.EMPTY, S.EMPTY), (S.COMPLETE_COMMIT, S.EMPTY), (S.COMPLETE_ABORT, S.EMPTY),
    (S.ONGOING, S.ONGOING), (S.EMPTY, S.ONGOING), (S.COMPLETE_COMMIT, S.ONGOING),
    (S.COMPLETE_ABORT, S.ONGOING),
    (S.ONGOING, S.PREPARE_COMMIT),
    (S.ONGOING, S.PREPARE_ABORT), (S.PREPARE_EPOCH_FENCE, S.PREPARE_ABORT),
    (S.EMPTY, S.PREPARE_ABORT), (S.COMPLETE_COMMIT, S.PREPARE_ABORT),
    (S.COMPLETE_ABORT, S.PREPARE_ABORT),
    (S.PREPARE_COMMIT, S.COMPLETE_COMMIT),
    (S.PREPARE_ABORT, S.COMPLETE_ABORT),
    (S.EMPTY, S.DEAD), (S.COMPLETE_ABORT, S.DEAD), (S.COMPLETE_COMMIT, S.DEAD),
    (S.ONGOING, S.PREPARE_EPOCH_FENCE),
}


def test_ids_and_names_match_kafka():
    assert [(s.value, s.display_name) for s in S] == [
        (0, "Empty"), (1, "Ongoing"), (2, "PrepareCommit"), (3, "PrepareAbort"),
        (4, "CompleteCommit"), (5, "CompleteAbort"), (6, "Dead"), (7, "PrepareEpochFence"),
    ]
    assert all(S.from_name(s.display_name) is s for s in S)
    assert S.from_name("Bogus") is None


@pytest.mark.parametrize("old", list(S))
@pytest.mark.parametrize("new", list(S))
def test_every_pair_follows_kafkas_table(old, new):
    allowed = (old, new) in KAFKA_EDGES
    assert (old in VALID_PREVIOUS_STATES[new]) is allowed
    if allowed:
        check_transition("t", old, new)
    else:
        with pytest.raises(IllegalTxnTransition, match=f"from {old.display_name}"):
            check_transition("t", old, new)


def test_expiration_allowed_only_when_no_transaction_is_in_flight():
    assert {s for s in S if s.expiration_allowed} == {
        S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT
    }
