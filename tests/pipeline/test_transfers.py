"""The demo's workload and the balances it implies (pure code, no Spark)."""

from __future__ import annotations

from pipeline.transfers import (
    Transfer,
    aborted_transfers,
    balances,
    committed_transfers,
    multiset,
    plan_transactions,
)


def small_plan(seed: int = 1):  # type: ignore[no-untyped-def]
    return plan_transactions(count=50, events_per_txn=4, accounts=5, abort_ratio=0.3, seed=seed)


def test_plan_is_deterministic_and_mixes_commits_and_aborts():
    plan = small_plan()
    assert plan == small_plan()
    assert plan != small_plan(seed=2)
    assert plan[0].commit
    assert committed_transfers(plan) and aborted_transfers(plan)
    assert len(committed_transfers(plan)) + len(aborted_transfers(plan)) == 50 * 4


def test_every_transfer_moves_money_between_two_accounts():
    for t in committed_transfers(small_plan()):
        assert t.from_account != t.to_account
        assert t.amount > 0


def test_balances_conserve_money():
    assert sum(balances(committed_transfers(small_plan())).values()) == 0


def test_balances_by_hand():
    ts = [
        Transfer(txn="t1", from_account="a", to_account="b", amount=10),
        Transfer(txn="t2", from_account="b", to_account="c", amount=4),
        Transfer(txn="t3", from_account="c", to_account="b", amount=4),
    ]
    assert balances(ts) == {"a": -10, "b": 10, "c": 0}


def test_json_round_trip_uses_the_event_field_names():
    t = Transfer(txn="t9", from_account="x", to_account="y", amount=7)
    assert t.to_json() == b'{"txn":"t9","from":"x","to":"y","amount":7}'
    assert Transfer.from_json(t.to_json()) == t
    assert Transfer.from_row({"txn": "t9", "from_account": "x", "to_account": "y", "amount": 7}) == t


def test_multiset_sees_a_duplicate():
    t = Transfer(txn="t1", from_account="a", to_account="b", amount=1)
    assert multiset([t]) != multiset([t, t])
