from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from broker.config import BrokerConfig
from broker.dispatch import HANDLERS
from broker.server import Broker
from broker.state import BrokerState
from storage.log_manager import LogManager
from storage.producer_id_blocks import LocalProducerIdBlocks
from tests.broker.local_view import local_view


@pytest.fixture
async def broker_state(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[BrokerState]]]:
    """make(**topics): a BrokerState over started logs under tmp_path with those topics
    (name=partition count); the logs close at teardown."""
    managers: list[LogManager] = []

    async def make(**topics: int) -> BrokerState:
        logs = LogManager(tmp_path, {})
        logs.load()
        logs.start()
        managers.append(logs)
        for name, partitions in topics.items():
            await logs.create_topic(name, partitions)
        config = BrokerConfig(log_dirs=str(tmp_path))
        return BrokerState(config=config, logs=logs, handlers=HANDLERS,
                           producer_id_blocks=LocalProducerIdBlocks(tmp_path), cluster=local_view(logs, config))

    yield make
    for logs in managers:
        await logs.close()


@contextlib.asynccontextmanager
async def serving(config: BrokerConfig) -> AsyncIterator[Broker]:
    """A broker of config running its own serve_forever in this loop, stopped on the way out."""
    broker = Broker(config)
    task = asyncio.create_task(broker.serve_forever())
    try:
        while not broker.ready:
            assert not task.done(), task.exception()
            await asyncio.sleep(0.01)
        yield broker
    finally:
        broker.stop_requested.set()
        await asyncio.wait_for(task, 30)
