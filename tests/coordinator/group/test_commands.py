"""Which groups a command is about: their shards must be loaded here before it runs."""

import asyncio

from coordinator.group import commands as c
from coordinator.group.offsets import OffsetAndMetadata
from storage.api import TopicPartition

TP = TopicPartition("t", 0)


async def test_groups_of_each_kind_of_command():
    reply: asyncio.Future = asyncio.get_running_loop().create_future()
    commit = c.CommitOffsets(group_id="g", member_id="", generation_id=-1, group_instance_id=None,
                             offsets={TP: OffsetAndMetadata(committed_offset=1)}, retention_ms=None, reply=reply)
    assert c.groups_of(commit) == ("g",) and c.group_id_of(commit) == "g"
    described = c.DescribeGroups(group_ids=("a", "b"), reply=reply)
    assert c.groups_of(described) == ("a", "b") and c.group_id_of(described) is None
    assert c.groups_of(c.CompleteTxn(producer_id=1, group_ids=frozenset({"g"}), commit=True, reply=reply)) == {"g"}
    assert c.groups_of(c.CompleteTxn(producer_id=1, group_ids=None, commit=True, reply=reply)) == ()
    assert c.groups_of(c.ListGroups(states=frozenset(), reply=reply)) == ()
    assert c.groups_of(c.TopicsDeleted(topics=frozenset({"t"}), reply=reply)) == ()
