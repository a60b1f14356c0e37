"""Share groups persisted in __consumer_offsets (Kafka 4.4's ShareGroup* records): after a kill -9
of the broker a share group comes back with its member, which kafka-share-groups still lists
until the member leaves or its session times out, and a group whose member left is listed and
described as Empty even when it has no share-partition state. A member killed without closing:
its share session ends with its connection, as in Kafka, and the records it held go to another
member at once (not when their locks run out), with delivery count 2."""

from __future__ import annotations

import subprocess
import sys

import confluent_kafka as ck
import pytest

from tests.e2e.test_share_groups_java import SETTINGS
from tests.e2e.test_share_groups_tools import MEMBER, poll_values, rows, setup, share_consumer, tool

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


def test_a_killed_members_records_go_to_another_member_when_its_connection_closes(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    setup(broker, "crash", 1, 20)
    # locks far longer than the poll below gives up after: only the session's end releases them
    assert tool(broker, "kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", "crash",
                "--add-config", "share.record.lock.duration.ms=60000").returncode == 0
    with subprocess.Popen([sys.executable, "-c", MEMBER, broker.bootstrap], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as member:
        assert member.stdout is not None  # it ACCEPTs 0-9 and holds 10-19
        assert member.stdout.readline().split() == ["acquired", "20", "committed", "[True]"]
        member.kill()
    with share_consumer(broker, "crash", explicit=True) as other:
        again = poll_values(other, 10, ck.AcknowledgeType.ACCEPT, give_up_s=30)
        other.commit_sync()
    assert sorted((int(m.value()), m.delivery_count()) for m in again) == [(i, 2) for i in range(10, 20)]
    assert broker.logged("share session ended with its connection")
