"""A single node's producer-id blocks in <data dir>/producer_id_block."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from protocol.errors import ErrorCode, KafkaError
from storage.fs import FileSystem
from storage.producer_id_blocks import LocalProducerIdBlocks


async def test_blocks_follow_each_other_across_restarts_and_honour_a_floor(tmp_path: Path) -> None:
    blocks = LocalProducerIdBlocks(tmp_path)
    assert [await blocks.allocate_producer_ids(10) for _ in range(2)] == [0, 10]
    assert (tmp_path / "producer_id_block").read_text() == "20\n"
    again = LocalProducerIdBlocks(tmp_path)  # a restart
    await again.honour(15)  # below the file's mark: no change
    assert await again.allocate_producer_ids(5) == 20
    await again.honour(1000)
    assert await again.allocate_producer_ids(5) == 1000


class FullDisk(FileSystem):
    def write_atomically(self, path: Path, data: bytes, *, sync: bool = True) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")


async def test_a_block_that_cannot_be_saved_is_not_handed_out(tmp_path: Path) -> None:
    blocks = LocalProducerIdBlocks(tmp_path, FullDisk())
    with pytest.raises(KafkaError) as raised:
        await blocks.allocate_producer_ids(10)
    assert raised.value.code is ErrorCode.coordinator_not_available
    assert "No space left" in str(raised.value)
    assert not (tmp_path / "producer_id_block").exists()
