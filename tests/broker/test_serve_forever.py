"""Broker.serve_forever, the process's own run: its start-up heap leaves the collector's full passes."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

from broker.config import build_config
from broker.server import Broker


async def test_serve_forever_freezes_what_start_up_built(tmp_path: Path) -> None:
    config, _ = build_config({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data"),
                              "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"})
    broker = Broker(config)
    frozen_before = gc.get_freeze_count()
    task = asyncio.create_task(broker.serve_forever())
    try:
        while not broker.ready:
            assert not task.done(), task.exception()
            await asyncio.sleep(0.01)
        await asyncio.sleep(0)  # serve_forever's next step after start()
        assert gc.get_freeze_count() > frozen_before
        # state built by start-up is among the frozen objects, which full passes no longer walk
        assert gc.is_tracked(broker.state)
        assert not any(obj is broker.state for obj in gc.get_objects())
        broker.stop_requested.set()
        await asyncio.wait_for(task, 10)
        assert broker.stopped.is_set()
    finally:
        gc.unfreeze()  # the rest of the test session collects as before
        if not task.done():
            task.cancel()
