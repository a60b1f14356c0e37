"""Share groups persisted in __consumer_offsets (Kafka 4.4's ShareGroup* records): after a kill -9
of the broker a share group comes back with its member, which kafka-share-groups still lists
until the member leaves or its session times out, and a group whose member left is listed and
described as Empty even when it has no share-partition state."""

from __future__ import annotations

import pytest

from tests.e2e.test_share_groups_java import SETTINGS
from tests.e2e.test_share_groups_tools import rows, setup, share_consumer, tool

pytestmark = pytest.mark.e2e


def test_a_share_group_and_its_member_survive_a_kill_9(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    setup(broker, "kept", 2, 0)  # no records: the group has no share-partition state to find it by
    with share_consumer(broker, "kept") as member:
        member.poll(1.0)  # joins the group
        before = rows(tool(broker, "kafka-share-groups", "--describe", "--group", "kept", "--members").stdout)
        broker.kill()
        broker.start()
        after = rows(tool(broker, "kafka-share-groups", "--describe", "--group", "kept", "--members").stdout)
    assert len(before) == 2 and before[1][0] == "kept"
    assert after[1][:2] == before[1][:2]  # the same member id, back from __consumer_offsets
    broker.kill()  # the member left before: the group is Empty
    broker.start()
    assert tool(broker, "kafka-share-groups", "--list").stdout.split() == ["kept"]
    state = rows(tool(broker, "kafka-share-groups", "--describe", "--group", "kept", "--state").stdout)
    assert state[1][0] == "kept" and "Empty" in state[1]
