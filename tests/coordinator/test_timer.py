"""CoordinatorTimer: one deadline per key, replaced when scheduled again, fired earliest first."""

from coordinator.timer import CoordinatorTimer


def test_due_messages_come_earliest_first_and_once():
    timer: CoordinatorTimer[str] = CoordinatorTimer()
    timer.schedule("b", 20, "b at 20")
    timer.schedule("a", 10, "a at 10")
    assert timer.next_deadline_ms() == 10
    assert timer.pop_due(9) == []
    assert timer.pop_due(25) == ["a at 10", "b at 20"]
    assert timer.pop_due(25) == [] and timer.next_deadline_ms() is None


def test_scheduling_a_key_again_replaces_its_deadline():
    timer: CoordinatorTimer[str] = CoordinatorTimer()
    timer.schedule("group", 10, "first")
    timer.schedule("group", 30, "moved on")  # a heartbeat moved the session deadline
    assert timer.next_deadline_ms() == 30
    assert timer.pop_due(20) == []
    assert timer.pop_due(30) == ["moved on"]


def test_a_cancelled_key_never_fires():
    timer: CoordinatorTimer[str] = CoordinatorTimer()
    timer.schedule("group", 10, "gone")
    timer.cancel("group")
    assert timer.next_deadline_ms() is None and timer.pop_due(100) == []
