from coordinator.transaction.producer_id_manager import ProducerIdBlock, ProducerIdManager


def test_ids_come_only_from_applied_blocks():
    m = ProducerIdManager(block_size=3)
    assert m.try_generate() is None
    m.apply_block(ProducerIdBlock(first_producer_id=0, size=3))
    assert [m.try_generate() for _ in range(4)] == [0, 1, 2, None]


def test_a_new_block_replaces_the_spent_one():
    m = ProducerIdManager(block_size=10)
    m.apply_block(ProducerIdBlock(first_producer_id=0, size=10))
    assert m.try_generate() == 0
    m.apply_block(ProducerIdBlock(first_producer_id=500, size=10))  # a block of its own size, from the source
    assert [m.try_generate() for _ in range(2)] == [500, 501]
