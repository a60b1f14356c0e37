"""Transfer events and the balances they imply: plain Python, shared by the demo, the job's
checks and the tests.

An event is the JSON object {"txn": id, "from": account, "to": account, "amount": int}; a
transaction holds a few events and is either committed or aborted as a whole. Balances start at
zero: each event takes `amount` from `from` and gives it to `to`.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Transfer:
    txn: str
    from_account: str
    to_account: str
    amount: int

    def to_json(self) -> bytes:
        return json.dumps(
            {"txn": self.txn, "from": self.from_account, "to": self.to_account, "amount": self.amount},
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Transfer:
        """From a row of the job's parsed output (parquet or a DataFrame)."""
        return cls(txn=row["txn"], from_account=row["from_account"], to_account=row["to_account"], amount=row["amount"])

    @classmethod
    def from_json(cls, value: bytes | str) -> Transfer:
        obj = json.loads(value)
        return cls(txn=obj["txn"], from_account=obj["from"], to_account=obj["to"], amount=obj["amount"])


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedTxn:
    """One producer transaction: its events and whether the producer commits or aborts it."""

    txn: str
    transfers: tuple[Transfer, ...]
    commit: bool


def plan_transactions(
    *, count: int, events_per_txn: int, accounts: int, abort_ratio: float, seed: int, prefix: str = "t"
) -> list[PlannedTxn]:
    """A deterministic workload: `count` transactions of `events_per_txn` transfers each, about
    `abort_ratio` of them aborted (never the first, so every run commits something)."""
    rng = random.Random(seed)
    names = [f"acct-{i:03d}" for i in range(accounts)]
    plan = []
    for n in range(count):
        txn = f"{prefix}{n:06d}"
        transfers = tuple(
            Transfer(txn=txn, from_account=a, to_account=b, amount=rng.randint(1, 1000))
            for a, b in (rng.sample(names, 2) for _ in range(events_per_txn))
        )
        plan.append(PlannedTxn(txn=txn, transfers=transfers, commit=n == 0 or rng.random() >= abort_ratio))
    return plan


def committed_transfers(plan: Iterable[PlannedTxn]) -> list[Transfer]:
    return [t for p in plan if p.commit for t in p.transfers]


def aborted_transfers(plan: Iterable[PlannedTxn]) -> list[Transfer]:
    return [t for p in plan if not p.commit for t in p.transfers]


def balances(transfers: Iterable[Transfer]) -> dict[str, int]:
    """Per-account balance; accounts whose balance nets to zero are kept (they were touched)."""
    out: Counter[str] = Counter()
    for t in transfers:
        out[t.from_account] -= t.amount
        out[t.to_account] += t.amount
    return dict(out)


def multiset(transfers: Iterable[Transfer]) -> Counter[Transfer]:
    """Transfers as a multiset, so a duplicate or a missing event shows up in a comparison."""
    return Counter(transfers)
