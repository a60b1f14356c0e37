from coordinator.transaction.producer_id_manager import ProducerIdBlock, ProducerIdManager


def test_ids_come_only_from_persisted_blocks():
    m = ProducerIdManager(block_size=3)
    assert m.try_generate() is None
    block = m.next_block()
    assert block == ProducerIdBlock(first_producer_id=0, size=3)
    assert m.try_generate() is None  # proposing is not persisting
    m.apply_block(block)
    assert [m.try_generate() for _ in range(4)] == [0, 1, 2, None]
    assert m.next_block() == ProducerIdBlock(first_producer_id=3, size=3)


def test_replay_never_reuses_ids_of_the_last_block():
    m = ProducerIdManager(block_size=10)
    for first in (0, 10, 20):
        m.apply_block(ProducerIdBlock(first_producer_id=first, size=10))
    m.apply_block(ProducerIdBlock(first_producer_id=10, size=10))  # stale, out of order
    m.finish_loading()
    assert m.try_generate() is None
    block = m.next_block()
    assert block.first_producer_id == 30
    m.apply_block(block)
    assert m.try_generate() == 30


def test_block_size_change_keeps_ids_unique():
    m = ProducerIdManager(block_size=5)
    m.apply_block(ProducerIdBlock(first_producer_id=0, size=100))
    assert m.next_block() == ProducerIdBlock(first_producer_id=100, size=5)
