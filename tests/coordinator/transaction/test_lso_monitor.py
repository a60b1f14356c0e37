"""The LSO warning: LsoWatch's decisions (pure), and LsoMonitor's lines over real partition logs."""

from __future__ import annotations

import logging

from coordinator.transaction.lso_monitor import LsoMonitor, LsoWatch
from protocol.records import Record, build_batch
from storage.api import OpenTransaction, TopicPartition
from storage.log_manager import LogManager

TP = TopicPartition("t", 0)


def txn(pid: int = 7, first: int = 0, start: int = 1000) -> OpenTransaction:
    return OpenTransaction(producer_id=pid, producer_epoch=1, first_offset=first, start_timestamp=start,
                           last_timestamp=start)


def test_warns_once_past_the_threshold_then_once_per_period_then_clears() -> None:
    watch = LsoWatch(threshold_ms=100)
    held = {TP: [txn()]}
    assert watch.check(1099, held) == ([], [])
    assert watch.check(1100, held) == ([(TP, txn())], [])
    assert watch.check(1199, held) == ([], [])
    assert watch.check(1200, held) == ([(TP, txn())], [])
    assert watch.check(1250, {}) == ([], [(TP, txn())])
    assert watch.check(1300, {}) == ([], [])


def test_a_new_holder_clears_the_old_one_and_is_judged_on_its_own_age() -> None:
    watch = LsoWatch(threshold_ms=100)
    watch.check(2000, {TP: [txn(pid=7, first=0)]})
    newer = txn(pid=8, first=5, start=1990)
    assert watch.check(2010, {TP: [newer]}) == ([], [(TP, txn(pid=7, first=0))])
    assert watch.check(2090, {TP: [newer]}) == ([(TP, newer)], [])


async def test_monitor_names_the_partition_the_producer_and_the_abort_command(tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    logs = LogManager(tmp_path, {})
    logs.load()
    logs.start()
    try:
        await logs.create_topic("t", 1)
        plog = logs.get_log(TP)
        await plog.append(bytes(build_batch([Record(key=None, value=b"v", timestamp=5)], producer_id=31,
                                            producer_epoch=2, base_sequence=0, transactional=True)))
        await plog.append(bytes(build_batch([Record(key=None, value=b"w", timestamp=5)] * 3)))
        [open_txn] = plog.open_transactions()
        now = [open_txn.start_timestamp + 500]
        monitor = LsoMonitor(logs, 400, lambda: "h:9", clock=lambda: now[0])
        with caplog.at_level(logging.INFO, logger="coordinator.transaction.lso_monitor"):
            monitor.check_once()
            [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
            assert "last stable offset of t-0 held back 0.5 s by one open transaction: LSO 0 is 4 offsets " \
                   "behind the high watermark 4; transactional id unknown to the coordinator, producer id 31 " \
                   "epoch 2; started at offset 0 at " in warning
            assert warning.endswith("no timeout will end it (the coordinator does not know this producer id); "
                                    "to abort it: kafka-transactions --bootstrap-server h:9 abort --topic t "
                                    "--partition 0 --start-offset 0")
            caplog.clear()
            monitor.check_once()  # within the period: silent
            assert caplog.records == []
    finally:
        await logs.close()
