"""The consumer group protocol (KIP-848) end to end: confluent-kafka (librdkafka 2.x with
group.protocol=consumer) consumers against a real broker process: partitions shared out by the
broker's assignor and moved incrementally as members join and leave, offsets committed with
member epochs, and the group and its offsets resumed after kill -9 of the broker."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions

from tests.broker_process import REPO
from tests.e2e.test_consumer_groups import ALL, SETTINGS, TOPIC, group_broker, owned, poll_all, produce
from tests.e2e.test_java_clients import compile_java
from tests.e2e.test_kafka_tools import tool
from tests.e2e.test_metrics import Scraper
from tests.e2e.txn_clients import confluent_read, create_topics, plain_producer, wait_until

pytestmark = pytest.mark.e2e
__all__ = ("group_broker",)


def consumer(bootstrap: str, group: str, **extra: object) -> Consumer:
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    conf.update(extra)
    c = Consumer(conf)
    c.subscribe([TOPIC])
    return c


def settle(consumers: list[Consumer], sizes: list[int], received: list[bytes]) -> None:
    def split() -> bool:
        poll_all(consumers, received)
        parts = [owned(c) for c in consumers]
        disjoint = sum(len(p) for p in parts) == len(set().union(*parts))
        return sorted(len(p) for p in parts) == sorted(sizes) and set().union(*parts) == ALL and disjoint
    wait_until(split, f"assignments of sizes {sizes}", timeout=60)


def test_members_share_a_topic_and_rebalance_as_they_join_and_leave(group_broker) -> None:  # type: ignore[no-untyped-def]
    produce(group_broker.bootstrap, 60)
    received: list[bytes] = []
    a = consumer(group_broker.bootstrap, "kip848")
    settle([a], [6], received)
    b = consumer(group_broker.bootstrap, "kip848")
    settle([a, b], [3, 3], received)
    c = consumer(group_broker.bootstrap, "kip848", **{"group.remote.assignor": "uniform"})
    settle([a, b, c], [2, 2, 2], received)
    c.close()
    settle([a, b], [3, 3], received)
    every = {f"m{i}".encode() for i in range(60)}
    wait_until(lambda: (poll_all([a, b], received), every <= set(received))[1], "every record", timeout=60)
    admin = AdminClient({"bootstrap.servers": group_broker.bootstrap})
    [listed] = [g for g in admin.list_consumer_groups().result().valid if g.group_id == "kip848"]
    assert str(listed.type).endswith("CONSUMER")
    description = admin.describe_consumer_groups(["kip848"])["kip848"].result()
    assert len(description.members) == 2
    a.close()
    b.close()


JAVA_SOURCE = Path(__file__).parent / "java" / "ConsumerProtocolMember.java"
# kafka-clients 4.x, the client of Kafka's newest tools (4.4.0 now), and what it loads at run time.
JAVA_JARS = ("kafka-clients-4.", "slf4j-api-", "lz4-java-", "snappy-java-", "zstd-jni-")


@pytest.fixture(scope="module")
def java_member(tmp_path_factory: pytest.TempPathFactory) -> str:
    tools = REPO / "tools" / "kafka-tools"
    jars = [j for j in sorted(tools.glob("*.jar")) if j.name.startswith(JAVA_JARS)]
    if not any(j.name.startswith("kafka-clients-4") for j in jars):
        pytest.fail("tools/kafka-tools/kafka-clients-4.*.jar is missing: run `make kafka-tools`")
    return compile_java(tmp_path_factory.mktemp("kip848-java"), JAVA_SOURCE, jars)


class JavaMember:
    """A Java kafka-clients 4.x consumer (group.protocol=consumer) in its own process."""

    def __init__(self, classpath: str, bootstrap: str, group: str, protocol: str = "consumer") -> None:
        self.proc = subprocess.Popen(["java", f"-Dgroup.protocol={protocol}", "-cp", classpath,
                                      "ConsumerProtocolMember", bootstrap, TOPIC, group],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        self.assigned: set[int] = set()
        self.values: list[bytes] = []
        self.failed_commits: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            kind, _, rest = line.strip().partition(" ")
            if kind == "ASSIGNED":
                self.assigned = {int(p) for p in rest.split(",") if p}
            elif kind == "RECORD":
                self.values.append(rest.split(" ", 2)[2].encode())
            elif kind == "COMMIT_FAILED":
                self.failed_commits.append(rest)

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(60) == 0
        self._reader.join(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self._reader.join(10)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def committed_offsets(bootstrap: str, group: str) -> dict[int, int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    [result] = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]).values()
    return {tp.partition: tp.offset for tp in result.result().topic_partitions if tp.topic == TOPIC}


def poll_and_commit(c: Consumer, received: list[bytes]) -> None:
    before = len(received)
    poll_all([c], received)
    if len(received) > before:
        c.commit(asynchronous=False)


def test_java_and_librdkafka_members_share_a_topic_and_resume_after_kill_9(  # type: ignore[no-untyped-def]
        group_broker, java_member: str) -> None:
    bs = group_broker.bootstrap
    produce(bs, 60)
    got: list[bytes] = []
    a = consumer(bs, "mixed")
    j = JavaMember(java_member, bs, "mixed")
    try:
        def shared() -> bool:
            poll_and_commit(a, got)
            mine = {p for _, p in owned(a)}
            return len(mine) == 3 and len(j.assigned) == 3 and mine | j.assigned == set(range(6))
        wait_until(shared, "librdkafka and Java members owning 3 partitions each", timeout=90)
        every = {f"m{i}".encode() for i in range(60)}
        wait_until(lambda: (poll_and_commit(a, got), every <= set(got) | set(j.values))[1], "every record", 60)
        wait_until(lambda: committed_offsets(bs, "mixed") == dict.fromkeys(range(6), 10), "every offset committed")
        # Both members stay in the group across a crash of the broker: it replays their epochs
        # and assignments from __consumer_offsets and they carry on from their committed offsets.
        # What each member has read is counted before the restart, not after the produce: the Java
        # member polls in its own process and may have read its partitions' new records by then
        # (a record can be fetched before its producer hears it was written).
        before_a, before_j = len(got), len(j.values)
        group_broker.restart(kill=True)
        produce(bs, 12, start=60)
        later = {f"m{i}".encode() for i in range(60, 72)}
        wait_until(lambda: (poll_and_commit(a, got), later <= set(got[before_a:]) | set(j.values[before_j:]))[1],
                   "the 12 records after the restart", 90)
        assert set(got[before_a:]) | set(j.values[before_j:]) == later  # nothing consumed twice
        j.stop()
        wait_until(lambda: (poll_and_commit(a, got), len(owned(a)) == 6)[1], "the Java member's partitions")
    finally:
        j.close()
        a.close()


def test_kafka_tools_show_a_consumer_protocol_group(group_broker) -> None:  # type: ignore[no-untyped-def]
    """kafka-groups and kafka-consumer-groups 4.4.0 describe the group through ListGroups v5 and
    ConsumerGroupDescribe, as they do on Kafka 4.x (outputs checked against Kafka's layout)."""
    produce(group_broker.bootstrap, 12)
    c = consumer(group_broker.bootstrap, "tools-848", **{"client.id": "tools-client"})
    got: list[bytes] = []
    try:
        wait_until(lambda: (poll_all([c], got), len(got) >= 12)[1], "the records")
        c.commit(asynchronous=False)
        listed = tool(group_broker, "kafka-groups", "--list").splitlines()
        assert ["tools-848", "Consumer", "consumer"] in [line.split() for line in listed[1:]], listed
        typed = tool(group_broker, "kafka-consumer-groups", "--list", "--type", "consumer").splitlines()
        assert typed[0].split() == ["GROUP", "TYPE"] and typed[1].split() == ["tools-848", "Consumer"], typed
        state = tool(group_broker, "kafka-consumer-groups", "--describe", "--group", "tools-848", "--state")
        [row] = [line.split() for line in state.splitlines() if line.startswith("tools-848")]
        assert row[-3:] == ["uniform", "Stable", "1"], state
        members = tool(group_broker, "kafka-consumer-groups", "--describe", "--group", "tools-848", "--members",
                       "--verbose")
        [member] = [line.split() for line in members.splitlines() if line.startswith("tools-848")]
        # CLIENT-ID, #PARTITIONS, CURRENT-EPOCH, CURRENT-ASSIGNMENT, TARGET-EPOCH, TARGET-ASSIGNMENT
        assert member[3:] == ["tools-client", "6", "1", f"{TOPIC}:0,1,2,3,4,5", "1", f"{TOPIC}:0,1,2,3,4,5"], members
        offsets = tool(group_broker, "kafka-consumer-groups", "--describe", "--group", "tools-848")
        rows = [line.split() for line in offsets.splitlines() if line.startswith("tools-848")]
        assert sorted(int(r[2]) for r in rows) == list(range(6)) and all(r[5] == "0" for r in rows), offsets
    finally:
        c.close()


def test_regex_subscription_picks_up_new_topics_and_partitions(group_broker) -> None:  # type: ignore[no-untyped-def]
    """SubscribedTopicRegex is resolved by the broker: a topic created later, and partitions
    added later, join the assignment without the member doing anything."""
    bs = group_broker.bootstrap
    c = Consumer({"bootstrap.servers": bs, "group.id": "regex-848", "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 1000})
    c.subscribe(["^ev.*"])
    got: list[bytes] = []
    try:
        wait_until(lambda: (poll_all([c], got), owned(c) == ALL)[1], "the events topic by regex")
        create_topics(bs, ["evolved"], 2)
        create_topics(bs, ["other"], 1)
        wait_until(lambda: (poll_all([c], got), owned(c) == ALL | {("evolved", 0), ("evolved", 1)})[1],
                   "the new topic matching the regex")
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_partitions([NewPartitions("evolved", 3)])["evolved"].result(30)
        wait_until(lambda: (poll_all([c], got), ("evolved", 2) in owned(c))[1], "the new partition")
        assert not any(t == "other" for t, _ in owned(c))
    finally:
        c.close()


_KILLED_MEMBER = textwrap.dedent("""
    import sys
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "expiry-848", "group.protocol": "consumer"})
    c.subscribe(["events"])
    while not c.assignment():
        c.poll(0.1)
    print("assigned", len(c.assignment()), flush=True)
    while True:
        c.poll(0.1)
""")


def test_a_killed_member_is_fenced_after_the_session_timeout(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS | {"group.consumer.session.timeout.ms": "6000",
                                        "group.consumer.heartbeat.interval.ms": "500"})
    create_topics(broker.bootstrap, [TOPIC], 6)
    survivor = consumer(broker.bootstrap, "expiry-848")
    got: list[bytes] = []
    wait_until(lambda: (poll_all([survivor], got), len(owned(survivor)) == 6)[1], "the first member's partitions")
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_MEMBER, broker.bootstrap], stdout=subprocess.PIPE,
                            text=True, cwd=REPO)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
    reader.start()
    try:
        # The survivor keeps heartbeating meanwhile: it must revoke before the newcomer gets any.
        wait_until(lambda: (poll_all([survivor], got), len(owned(survivor)) == 3 and bool(lines))[1], "the split")
        assert lines[0].startswith("assigned 3")
        proc.kill()  # no leave heartbeat: only the session timeout can free its partitions
        proc.wait()
        wait_until(lambda: (poll_all([survivor], got), len(owned(survivor)) == 6)[1], "the killed member's share")
        assert broker.logged("after their session or rebalance timeout")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(10)
        proc.stdout.close()  # type: ignore[union-attr]
        survivor.close()


def test_a_static_member_restarting_gets_its_partitions_back(group_broker) -> None:  # type: ignore[no-untyped-def]
    bs = group_broker.bootstrap
    a = consumer(bs, "static-848", **{"group.instance.id": "a"})
    b = consumer(bs, "static-848", **{"group.instance.id": "b"})
    got: list[bytes] = []
    settle([a, b], [3, 3], got)
    a_owned, b_owned = owned(a), owned(b)
    b.close()  # a static member leaves with epoch -2: its partitions wait for it
    poll_all([a], got)
    b2 = consumer(bs, "static-848", **{"group.instance.id": "b"})
    try:
        wait_until(lambda: (poll_all([a, b2], got), owned(b2) == b_owned)[1], "the static member's old partitions")
        assert owned(a) == a_owned
    finally:
        a.close()
        b2.close()


def test_java_consume_transform_produce_with_the_consumer_protocol_is_exactly_once(  # type: ignore[no-untyped-def]
        broker_factory, tmp_path: Path) -> None:
    """kafka-clients 4.4.0: TxnOffsetCommit carries the member id and member epoch from
    consumer.groupMetadata(); aborted batches are re-read from the committed offsets."""
    broker = broker_factory(SETTINGS)
    bs = broker.bootstrap
    create_topics(bs, ["ctp-in", "ctp-out"], 3)
    source = plain_producer(bs)
    for i in range(300):
        source.produce("ctp-in", key=str(i).encode(), value=f"v{i}".encode())
    assert source.flush(30) == 0
    tools = REPO / "tools" / "kafka-tools"
    jars = [j for j in sorted(tools.glob("*.jar")) if j.name.startswith(JAVA_JARS)]
    classpath = compile_java(tmp_path, Path(__file__).parent / "java" / "ConsumerProtocolCtp.java", jars)
    proc = subprocess.run(["java", "-cp", classpath, "ConsumerProtocolCtp", bs, "ctp-in", "ctp-out", "300"],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    checks = dict(line.split()[1:3] for line in proc.stdout.splitlines() if line.startswith("CHECK "))
    assert checks == {"committed": "300", "member_epoch_positive": "true", "aborted_some": "true"}, proc.stdout
    out = confluent_read(bs, {"ctp-out": 3}, "read_committed", 300)
    assert sorted(r[3] for r in out) == sorted(f"V{i}".encode() for i in range(300))
    assert broker.logged("group java-ctp-848: now a consumer group")


def test_an_assign_only_consumer_protocol_consumer_commits_and_reads_back(group_broker) -> None:  # type: ignore[no-untyped-def]
    """librdkafka with group.protocol=consumer that never subscribes commits with the member id it
    made up and epoch -1; Kafka takes that into a new (simple) group, as an assign() commit
    (librdkafka's 0099-commit_metadata and 0030-offset_commit), where it was UNKNOWN_MEMBER_ID."""
    c = Consumer({"bootstrap.servers": group_broker.bootstrap, "group.id": "kip848-assign-only",
                  "group.protocol": "consumer", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(TOPIC, 0, 0)])
        c.commit(offsets=[TopicPartition(TOPIC, 0, 5, "meta")], asynchronous=False)
        [got] = c.committed([TopicPartition(TOPIC, 0)], timeout=30)
        assert (got.offset, got.metadata, got.error) == (5, "meta", None)
    finally:
        c.close()


def run_member(classpath: str, bootstrap: str, group: str, records: int, committed: int) -> JavaMember:
    """A Java member that reads `records` records, commits up to `committed` on every partition, and leaves."""
    member = JavaMember(classpath, bootstrap, group)
    try:
        wait_until(lambda: len(member.values) >= records, f"the member's {records} records", timeout=90)
        wait_until(lambda: committed_offsets(bootstrap, group) == dict.fromkeys(range(6), committed),
                   f"every partition's offset committed at {committed}")
        member.stop()
    finally:
        member.close()
    return member


def test_java_4_consumer_commits_and_fetches_offsets_by_topic_id(  # type: ignore[no-untyped-def]
        broker_factory, java_member: str) -> None:
    """kafka-clients 4.4.0 with group.protocol=consumer knows its topics' ids from Metadata and so
    commits with OffsetCommit v10 and reads its committed offsets back with OffsetFetch v10 (KIP-848
    topic ids) once the broker offers them; the offsets are the group's by name too, and a member
    that takes over resumes from them without reading a record twice."""
    broker = broker_factory({**SETTINGS, "metrics.port": "0"})
    bs = broker.bootstrap
    create_topics(bs, [TOPIC], 6)
    produce(bs, 60)
    first = run_member(java_member, bs, "by-id", 60, 10)
    produce(bs, 12, start=60)
    second = run_member(java_member, bs, "by-id", 12, 12)
    assert sorted(first.values) == sorted(f"m{i}".encode() for i in range(60))
    assert sorted(second.values) == sorted(f"m{i}".encode() for i in range(60, 72))  # resumed, none twice
    assert not first.failed_commits and not second.failed_commits
    samples = Scraper(broker).samples()
    versions = {(labels["request"], labels["version"]): value for (name, frozen), value in samples.items()
                if name == "kafka_network_requestmetrics_requests_total" and (labels := dict(frozen))}
    assert versions.get(("OffsetCommit", "10"), 0) > 0 and versions.get(("OffsetFetch", "10"), 0) > 0, versions
    assert versions.get(("OffsetCommit", "9"), 0) == 0, versions  # the Java member never fell back to names
