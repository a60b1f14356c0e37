"""Raw share group requests and their answers, as a Kafka 4.4 node gave them side by side for the
same requests (bench/servers.py's start_kafka): ShareGroupHeartbeat's validation, an unknown group,
a join (group epoch 2: the member and the subscribed topics' metadata each bump it), a fenced
epoch's message, ShareGroupDescribe of an unknown group, a ShareFetch without a session and a
ShareAcknowledge at epoch 0. Where the two differ: Kafka leaves some messages null that eosbroker
fills. The first heartbeat answers an empty assignment on both: the share-partitions are
initialized first and assigned from the member's next heartbeat."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.share_acknowledge.v1.request import ShareAcknowledgeRequest
from kio.schema.share_fetch.v1.request import ShareFetchRequest
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from kio.static.primitive import i32

from protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess
from tests.e2e.txn_clients import create_topics
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e
E = ErrorCode


def heartbeat(member: str, epoch: int, topics: tuple[str, ...] | None = ("t",)) -> ShareGroupHeartbeatRequest:
    return ShareGroupHeartbeatRequest(group_id="g", member_id=member, member_epoch=i32(epoch), rack_id=None,
                                      subscribed_topic_names=topics)


def test_share_group_answers_as_kafka_gives_them(broker: BrokerProcess) -> None:
    create_topics(broker.bootstrap, ["t"], 1)
    with RawClient(broker.bootstrap) as c:
        answers = [c.request(r) for r in (heartbeat("", 0), heartbeat("m1", 0, None), heartbeat("m2", 5))]
        assert [(a.error_code, a.error_message, a.member_epoch) for a in answers] == [
            (E.invalid_request, "MemberId can't be empty.", 0),  # Kafka: no message
            (E.invalid_request, "SubscribedTopicNames must be set in first request.", 0),
            (E.group_id_not_found, "Share group g not found.", 0)]
        joined = c.request(heartbeat("m1", 0))
        assert (joined.error_code, joined.member_id, joined.member_epoch, joined.heartbeat_interval) == (
            E.none, "m1", 2, datetime.timedelta(seconds=5))
        assert joined.assignment is not None and joined.assignment.topic_partitions == ()
        fenced = c.request(heartbeat("m1", 9, None))
        assert (fenced.error_code, fenced.error_message) == (
            E.fenced_member_epoch, "The share group member has a greater member epoch (9) than the one known by "
                                   "the group coordinator (2). The member must abandon all its partitions and rejoin.")
        described = c.request(ShareGroupDescribeRequest(group_ids=("g", "nope"), include_authorized_operations=False))
        assert [(g.error_code, g.group_state, g.group_epoch, g.assignor_name, len(g.members)) for g in
                described.groups[:1]] == [(E.none, "Stable", 2, "simple", 1)]
        assert (described.groups[1].error_code, described.groups[1].error_message) == (
            E.group_id_not_found, "Group nope not found.")
        fetch = c.request(ShareFetchRequest(
            group_id="g", member_id="m1", share_session_epoch=i32(3), max_wait=datetime.timedelta(milliseconds=10),
            min_bytes=i32(1), max_bytes=i32(1000), max_records=i32(10), batch_size=i32(10), topics=(),
            forgotten_topics_data=()))
        assert (fetch.error_code, fetch.acquisition_lock_timeout) == (E.share_session_not_found, datetime.timedelta(0))
        ack = c.request(ShareAcknowledgeRequest(group_id="g", member_id="m1", share_session_epoch=i32(0), topics=()))
        assert ack.error_code is E.invalid_share_session_epoch
        left = c.request(heartbeat("m1", -1, None))
        assert (left.error_code, left.member_epoch) == (E.none, -1)
