"""Every check of the history checker proven able to fail: hand-made histories, one anomaly each,
beside a clean history that must pass."""

from __future__ import annotations

import pytest

from tests.history.checker import Anomaly, History, Isolation, Outcome, Read, Write, check

A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)
RC, RU = Isolation.READ_COMMITTED, Isolation.READ_UNCOMMITTED


def clean_history() -> History:
    """p1 commits t1 over a-0 and b-0, aborts t2 on a-0; p2 sends two idempotent records to a-1,
    one acknowledged, one whose fate is unknown and that did land."""
    h = History()
    for w in (Write(value=b"t1-a", tp=A0, producer="p1", txn="t1"),
              Write(value=b"t1-b", tp=B0, producer="p1", txn="t1"),
              Write(value=b"t2-a", tp=A0, producer="p1", txn="t2"),
              Write(value=b"i1", tp=A1, producer="p2"),
              Write(value=b"i2", tp=A1, producer="p2")):
        h.send(w)
    h.settle_txn("t1", Outcome.ACKNOWLEDGED)
    h.settle_txn("t2", Outcome.FAILED)
    h.settle_send(b"i1", Outcome.ACKNOWLEDGED)
    h.settle_send(b"i2", Outcome.UNKNOWN)
    # offset 1 of a-0 is t1's commit marker, 3 t2's abort marker
    h.add_read(Read(label="after fault 1", isolation=RU, final=False,
                    records={A0: [(0, b"t1-a")], A1: [(0, b"i1")], B0: []}))
    h.add_read(Read(label="final", isolation=RC, final=True,
                    records={A0: [(0, b"t1-a")], A1: [(0, b"i1"), (1, b"i2")], B0: [(0, b"t1-b")]}))
    h.add_read(Read(label="final", isolation=RU, final=True,
                    records={A0: [(0, b"t1-a"), (2, b"t2-a")], A1: [(0, b"i1"), (1, b"i2")], B0: [(0, b"t1-b")]}))
    return h


def final_read(h: History, isolation: Isolation) -> Read:
    return next(r for r in h.reads if r.final and r.isolation is isolation)


def replace_read(h: History, old: Read, **records: list[tuple[int, bytes]]) -> None:
    tps = {"a0": A0, "a1": A1, "b0": B0}
    new = {**old.records, **{tps[k]: v for k, v in records.items()}}
    h.reads[h.reads.index(old)] = Read(label=old.label, isolation=old.isolation, final=old.final, records=new)


def kinds(anomalies: list[Anomaly]) -> set[str]:
    return {a.kind for a in anomalies}


def test_a_clean_history_has_no_anomaly():
    h = clean_history()
    assert check(h) == []
    assert h.summary() == {"writes": 5, "reads": 3, "sends acknowledged": 1, "sends unknown": 1,
                           "transactions acknowledged": 1, "transactions failed": 1}


def test_lost_acknowledged_send():
    h = clean_history()
    replace_read(h, final_read(h, RU), a1=[(1, b"i2")])
    assert kinds(check(h)) == {"lost"}


@pytest.mark.parametrize("isolation", [RU, RC])
def test_lost_record_that_an_earlier_read_showed(isolation):
    h = clean_history()  # i2's fate is unknown, but once read it must stay
    mid = h.reads[0]
    h.reads[0] = Read(label=mid.label, isolation=isolation, final=False,
                      records={**mid.records, A1: [(0, b"i1"), (1, b"i2")]})
    replace_read(h, final_read(h, isolation), a1=[(0, b"i1")])
    assert kinds(check(h)) == {"lost"}


def test_a_record_read_uncommitted_may_be_missing_at_read_committed():
    h = clean_history()  # t2-a is aborted: read_uncommitted shows it, read_committed must not
    h.reads[0] = Read(label="mid", isolation=RU, final=False, records={A0: [(0, b"t1-a"), (2, b"t2-a")]})
    assert check(h) == []


def test_lost_write_of_a_committed_transaction_is_also_torn():
    h = clean_history()
    replace_read(h, final_read(h, RC), b0=[])
    found = check(h)
    assert kinds(found) == {"lost", "torn"}
    assert "t1" in next(a.detail for a in found if a.kind == "torn")


def test_torn_transaction_of_unknown_outcome():
    h = clean_history()
    h.settle_txn("t1", Outcome.UNKNOWN)
    replace_read(h, final_read(h, RC), b0=[])
    assert kinds(check(h)) == {"torn"}


def test_a_transaction_torn_in_a_read_between_faults_is_fine():
    # markers reach the partitions one by one: only a final read must show all or nothing
    h = clean_history()
    mid = h.reads[0]
    h.reads[0] = Read(label=mid.label, isolation=RC, final=False, records=mid.records)
    assert check(h) == []


def test_aborted_transaction_visible_at_read_committed():
    h = clean_history()
    replace_read(h, final_read(h, RC), a0=[(0, b"t1-a"), (2, b"t2-a")])
    assert kinds(check(h)) == {"aborted-read"}


def test_failed_send_visible_at_any_isolation():
    h = clean_history()
    h.settle_send(b"i2", Outcome.FAILED)
    found = check(h)
    assert kinds(found) == {"aborted-read"} and len(found) == 2  # in both final reads


def test_duplicate_within_one_read():
    h = clean_history()
    replace_read(h, final_read(h, RU), a1=[(0, b"i1"), (1, b"i2"), (2, b"i1")])
    assert kinds(check(h)) == {"duplicate"}


def test_duplicate_across_reads():
    h = clean_history()
    replace_read(h, h.reads[0], a1=[(5, b"i1")])
    assert kinds(check(h)) == {"duplicate"}


def test_reused_offset_across_a_restart():
    h = clean_history()
    # before the fault i2 sat at a-1 offset 0, afterwards i1 does: the offset was written twice
    replace_read(h, h.reads[0], a1=[(0, b"i2")])
    assert "reused-offset" in kinds(check(h))


def test_reordered_within_a_producer_partition_sequence():
    h = clean_history()
    replace_read(h, final_read(h, RU), a1=[(0, b"i2"), (1, b"i1")])
    assert "reordered" in kinds(check(h))


def test_order_across_producers_is_free():
    h = clean_history()
    h.send(Write(value=b"x", tp=A1, producer="p3"))
    h.settle_send(b"x", Outcome.ACKNOWLEDGED)
    for read in [r for r in h.reads if r.final]:
        replace_read(h, read, a1=[(0, b"i1"), (1, b"x"), (2, b"i2")])
    assert check(h) == []


def test_nonmonotonic_offsets_within_a_read():
    h = clean_history()
    replace_read(h, final_read(h, RU), a1=[(1, b"i2"), (0, b"i1")])
    assert "nonmonotonic" in kinds(check(h))


@pytest.mark.parametrize("records", [{"a1": [(0, b"i1"), (1, b"i2"), (2, b"nobody")]},
                                     {"b0": [(0, b"t1-b"), (1, b"i1")]}], ids=["never-sent", "other-partition"])
def test_unknown_value(records):
    h = clean_history()
    replace_read(h, final_read(h, RU), **records)
    assert "unknown-value" in kinds(check(h))
