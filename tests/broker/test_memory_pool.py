"""MemoryPool: the queued.max.request.bytes budget, without an event loop."""

from broker.memory_pool import MemoryPool


def test_reservations_up_to_the_capacity_succeed_and_beyond_it_fail():
    pool = MemoryPool(100)
    assert pool.try_reserve(60)
    assert pool.try_reserve(40)
    assert not pool.try_reserve(1)
    assert pool.reserved == 100


def test_a_request_larger_than_the_budget_is_admitted_alone():
    pool = MemoryPool(100)
    assert pool.try_reserve(150)
    assert not pool.try_reserve(1)
    pool.release(150)
    assert pool.try_reserve(1)


def test_unbounded_when_negative():
    pool = MemoryPool(-1)
    assert all(pool.try_reserve(1 << 30) for _ in range(10))


def test_release_wakes_waiters_first_come_first_served():
    pool = MemoryPool(100)
    assert pool.try_reserve(100)
    woken: list[str] = []

    def waiter(name: str, size: int):  # type: ignore[no-untyped-def]
        def wake() -> bool:
            if pool.try_reserve(size):
                woken.append(name)
                return True
            return False
        return wake

    pool.wait(waiter("big", 80))
    pool.wait(waiter("small", 10))
    pool.release(50)  # 50 free: "big" does not fit, and "small" must not overtake it
    assert woken == []
    pool.release(50)
    assert woken == ["big", "small"]
    assert pool.reserved == 90


def test_forget_drops_a_waiter():
    pool = MemoryPool(10)
    assert pool.try_reserve(10)
    calls: list[int] = []

    def wake() -> bool:
        calls.append(1)
        return True

    pool.wait(wake)
    pool.forget(wake)
    pool.forget(wake)  # twice is harmless (a connection closing after it was woken)
    pool.release(10)
    assert calls == []
