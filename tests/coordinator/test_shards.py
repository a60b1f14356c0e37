"""CoordinatorShards: which shards a coordinator serves, and what other keys are told."""

import pytest

from coordinator.shards import CoordinatorShards, ShardStatus
from protocol.errors import ErrorCode, KafkaError


def code_of(shards: CoordinatorShards, partition: int) -> ErrorCode:
    with pytest.raises(KafkaError) as info:
        shards.check(partition, "k")
    return info.value.code


def test_a_shard_serves_only_once_loaded_with_its_epoch() -> None:
    shards = CoordinatorShards("__transaction_state", "transactional id")
    assert code_of(shards, 3) is ErrorCode.not_coordinator
    assert shards.elect(3, 7)
    assert code_of(shards, 3) is ErrorCode.coordinator_load_in_progress
    assert shards.finish_loading(3, 7)
    assert shards.check(3, "k") == 7 and 3 in shards and list(shards.loaded()) == [3]


def test_an_old_or_repeated_election_loads_nothing() -> None:
    shards = CoordinatorShards("t", "group")
    assert shards.elect(0, 5)
    assert not shards.elect(0, 5) and not shards.elect(0, 4)
    assert shards.elect(0, 6)  # re-elected meanwhile: the load of epoch 5 is stale
    assert not shards.finish_loading(0, 5)
    assert shards.status(0) is ShardStatus.LOADING
    assert shards.finish_loading(0, 6)


def test_a_load_that_ends_after_resignation_is_discarded() -> None:
    shards = CoordinatorShards("t", "group")
    shards.elect(1, 2)
    assert shards.resign(1) and not shards.resign(1)
    assert not shards.finish_loading(1, 2)
    assert code_of(shards, 1) is ErrorCode.not_coordinator
    assert 1 not in shards
