"""The coordinators' supervised background tasks: a failure is logged and the work runs again."""

import logging

from coordinator.tasks import Backoff, RateLimitedLog, TaskSupervisor
from protocol.errors import ErrorCode, KafkaError


async def test_failed_work_is_logged_with_its_traceback_and_run_again(caplog):
    runs = []

    async def work():
        runs.append(len(runs))
        if len(runs) < 3:
            raise OSError(f"failure {len(runs)}")
        return "done"

    supervisor = TaskSupervisor("test coordinator", Backoff(initial_ms=1, max_ms=2))
    with caplog.at_level(logging.ERROR, logger="coordinator.tasks"):
        assert await supervisor.spawn("the work", work) == "done"
    assert runs == [0, 1, 2]
    failures = [r for r in caplog.records if "the work failed" in r.getMessage()]
    assert len(failures) == 2 and all(r.exc_info and "OSError" in r.exc_text for r in failures)


async def test_a_retriable_kafka_error_is_one_warning_line_without_traceback(caplog):
    """A database restart or a failover fails the work with a retriable error: expected, so a
    WARNING that says why, not an ERROR with a traceback."""
    runs = []

    async def work():
        runs.append(len(runs))
        if len(runs) < 2:
            raise KafkaError(ErrorCode.kafka_storage_error, "the cluster database did not confirm the append")
        return "done"

    supervisor = TaskSupervisor("test coordinator", Backoff(initial_ms=1, max_ms=2))
    with caplog.at_level(logging.WARNING, logger="coordinator.tasks"):
        assert await supervisor.spawn("the work", work) == "done"
    [failure] = [r for r in caplog.records if "the work failed" in r.getMessage()]
    assert failure.levelno == logging.WARNING and failure.exc_info is None
    assert "did not confirm the append" in failure.getMessage()


async def test_stop_cancels_what_still_runs():
    async def forever():
        raise OSError("never heals")

    supervisor = TaskSupervisor("test", Backoff(initial_ms=1, max_ms=1))
    task = supervisor.spawn("doomed", forever)
    await supervisor.stop()
    assert task.cancelled() and not supervisor.running


def test_backoff_doubles_up_to_its_cap():
    b = Backoff(initial_ms=100, max_ms=1000)
    assert [b.delay_s(n) for n in (1, 2, 3, 4, 5, 100)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


def test_rate_limited_log_lets_the_first_line_through_then_holds_back():
    limiter = RateLimitedLog(interval_s=3600)
    assert [limiter.due() for _ in range(4)] == [True, False, False, False]
    assert limiter.suppressed == 3
