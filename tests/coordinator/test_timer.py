"""CoordinatorTimer: one deadline per key, replaced when scheduled again, fired earliest first."""

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from coordinator.timer import CoordinatorTimer

KEYS = st.sampled_from(["g1", "g2", "g3", "retention"])


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


class TimerAgainstAModel(RuleBasedStateMachine):
    """Random schedules, cancels and clock steps: the timer fires exactly what a dict of the
    latest deadline per key says is due, earliest first, each once."""

    def __init__(self) -> None:
        super().__init__()
        self.timer: CoordinatorTimer[tuple[str, int]] = CoordinatorTimer()
        self.model: dict[str, int] = {}
        self.now = 0

    @rule(key=KEYS, delay=st.integers(0, 50))
    def schedule(self, key: str, delay: int) -> None:
        self.timer.schedule(key, self.now + delay, (key, self.now + delay))
        self.model[key] = self.now + delay

    @rule(key=KEYS)
    def cancel(self, key: str) -> None:
        self.timer.cancel(key)
        self.model.pop(key, None)

    @rule(step=st.integers(0, 30))
    def time_passes(self, step: int) -> None:
        self.now += step
        fired = self.timer.pop_due(self.now)
        due = sorted((deadline, key) for key, deadline in self.model.items() if deadline <= self.now)
        assert sorted((deadline, key) for key, deadline in fired) == due
        assert [deadline for _, deadline in fired] == sorted(deadline for _, deadline in fired)
        for _, key in due:
            del self.model[key]

    @invariant()
    def next_deadline_is_the_models_earliest(self) -> None:
        assert self.timer.next_deadline_ms() == min(self.model.values(), default=None)


TestTimerAgainstAModel = TimerAgainstAModel.TestCase
