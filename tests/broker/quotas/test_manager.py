"""Which quota applies to a client (Kafka's DefaultQuotaCallback order), the quotas' store, and
the byte rates counted against them."""

import pytest

from broker.quotas.manager import ClientQuotas, QuotaKind
from storage.broker_config_store import FileBrokerConfigStore

U, C = "user", "client-id"


def kind(*bounds: tuple[tuple[tuple[str, str | None], ...], float]) -> QuotaKind:
    k = QuotaKind("producer_byte_rate", samples=11, window_ms=1000)
    k.set_bounds({tuple(sorted(entity)): bound for entity, bound in bounds})
    return k


# Each set of quotas, and what alice's client c1 is measured as and held to.
@pytest.mark.parametrize("bounds, expected", [
    ([], (("", "c1"), None)),
    ([(((C, None),), 8)], (("", "c1"), 8)),
    ([(((C, None),), 8), (((C, "c1"),), 7)], (("", "c1"), 7)),
    ([(((C, "c1"),), 7), (((U, None),), 6)], (("alice", ""), 6)),
    ([(((U, None),), 6), (((U, None), (C, None)), 5)], (("alice", "c1"), 5)),
    ([(((U, None), (C, None)), 5), (((U, None), (C, "c1")), 4)], (("alice", "c1"), 4)),
    ([(((U, None), (C, "c1")), 4), (((U, "alice"),), 3)], (("alice", ""), 3)),
    ([(((U, "alice"),), 3), (((U, "alice"), (C, None)), 2)], (("alice", "c1"), 2)),
    ([(((U, "alice"), (C, None)), 2), (((U, "alice"), (C, "c1")), 1)], (("alice", "c1"), 1)),
    ([(((U, "bob"),), 9), (((C, "c2"),), 9)], (("", "c1"), None)),
])
def test_the_most_specific_quota_applies(bounds, expected):
    assert kind(*bounds).resolve("alice", "c1") == expected


def test_clients_under_one_default_are_measured_apart():
    k = kind((((C, None),), 1000))
    assert k.record("alice", "a", 10_000, now_ms=0) == 0  # 1,000 B/s over 10 s: at the bound
    assert k.record("alice", "b", 10_000, now_ms=0) == 0  # b has its own rate
    assert k.record("alice", "a", 10_000, now_ms=0) == 10_000  # a is at 2,000 B/s: 10 s to come back


def test_measured_rates_and_throttles():
    k = kind((((C, None),), 1000))
    k.record("alice", "a", 10_000, now_ms=0)
    k.record("alice", "a", 10_000, now_ms=0)  # throttled 10 s
    k.record("alice", "a", 10_000, now_ms=0)  # throttled 20 s
    k.record("alice", "b", 5_000, now_ms=0)
    assert sorted(k.measured(0)) == [(("", "a"), 3_000.0, 15_000.0), (("", "b"), 500.0, 0.0)]


def test_no_quota_counts_nothing():
    k = kind((((C, "other"),), 10))
    assert k.record("alice", "c1", 10**9, now_ms=0) == 0
    assert k.max_in_window("alice", "c1") is None


def test_unrecord_and_max_in_window():
    k = kind((((C, "c1"),), 1000))
    assert k.max_in_window("alice", "c1") == 10_000  # bound * (samples - 1) windows
    assert k.record("alice", "c1", 20_000, now_ms=0) > 0
    k.unrecord("alice", "c1", 20_000, now_ms=0)
    assert k.record("alice", "c1", 10_000, now_ms=0) == 0


async def test_quotas_are_kept_in_the_store_and_read_back(tmp_path):
    store = FileBrokerConfigStore(tmp_path)
    quotas = ClientQuotas(store)
    entity = ((C, "c1"), (U, None))
    await quotas.alter({entity: lambda before: {**before, "producer_byte_rate": 2048.0},
                        ((U, "y"),): lambda before: {"consumer_byte_rate": 3.0}}, validate_only=False)
    await quotas.alter({((U, "x"),): lambda before: {"consumer_byte_rate": 1.0}}, validate_only=True)
    assert quotas.entries == {entity: {"producer_byte_rate": 2048.0}, ((U, "y"),): {"consumer_byte_rate": 3.0}}
    await quotas.alter({((U, "y"),): lambda before: {}}, validate_only=False)
    assert quotas.entries == {entity: {"producer_byte_rate": 2048.0}}
    assert quotas.produce.resolve("bob", "c1") == (("bob", "c1"), 2048.0)
    assert quotas.fetch.resolve("bob", "c1")[1] is None
    again = FileBrokerConfigStore(tmp_path)
    again.load()
    assert ClientQuotas(again).entries == {entity: {"producer_byte_rate": 2048.0}}
    await quotas.alter({entity: lambda before: {}}, validate_only=False)
    assert quotas.entries == {} and quotas.produce.resolve("bob", "c1")[1] is None
    assert store.entities() == []
