"""A stock Kafka Streams 4.4.0 application with processing.guarantee=exactly_once_v2
(tests/e2e/java/StreamsEos.java, from `make kafka-tools`) against the broker: killed with
SIGKILL mid-transaction and restarted, or stopped mid-transaction until its group has moved its
tasks to another instance and then resumed (a zombie).

The application sums integer values per key: it re-groups `input` by key through a repartition
topic and keeps the sums in a RocksDB store with a changelog topic, so it uses what Streams uses:
CreateTopics with topic configs for its internal topics, the classic group protocol with Streams'
own assignor, a transactional producer per stream thread (sendOffsetsToTransaction with the
consumer's group metadata), read_committed consumers, DeleteRecords on the repartition topic,
ListOffsets and the restore of its store from the changelog. The input records go to random
partitions, so a key's records meet only after the repartition.

Exactly once means that, whatever the kill leaves behind (open transactions, records processed but
not committed), every sum committed to `output` counts each input record once: no committed sum
of a key ever exceeds the sum of all its input values (they are positive), and the last one equals
it. Restarted on the same state directory, the application keeps its process id and so its
transactional ids (initTransactions fences the killed producers and aborts their transactions);
on a wiped one it gets new ones, and the killed producers' transactions (and any group offsets
they hold pending) are aborted by the broker when they time out."""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, IsolationLevel, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, OffsetSpec

from tests.broker_process import REPO, BrokerProcess
from tests.e2e.test_java_clients import compile_java
from tests.e2e.txn_clients import wait_until

pytestmark = pytest.mark.e2e

SOURCE = Path(__file__).parent / "java" / "StreamsEos.java"
PARTITIONS = 3
KEYS = [f"k{i}" for i in range(10)]
APP_ID = "sums"
REPARTITION = f"{APP_ID}-by-key-repartition"
CHANGELOG = f"{APP_ID}-sums-changelog"
WAIT_S = 60.0
BROKER_SETTINGS = {
    "transaction.state.log.num.partitions": "5", "offsets.topic.num.partitions": "5",
    # a group forms as soon as its members have joined, as in Kafka's own Streams integration tests
    "group.initial.rebalance.delay.ms": "0",
    # the killed producers' transactions are aborted soon after their transaction.timeout.ms (10 s)
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}
# session.timeout.ms at the broker's group.min.session.timeout.ms: the killed instance's members
# leave the group 6 s after the kill, not 45 s. The repartition topic is purged (DeleteRecords)
# after every commit rather than every 30 s.
APP_CONFIGS = ("session.timeout.ms=6000", "heartbeat.interval.ms=1000", "repartition.purge.interval.ms=100")


def streams_classpath(out: Path) -> str:
    tools = REPO / "tools" / "kafka-tools"
    jars = sorted(tools.glob("*.jar"))
    if not any(j.name.startswith("kafka-streams-") for j in jars):
        pytest.fail("tools/kafka-tools/kafka-streams-*.jar is missing: run `make kafka-tools`")
    return compile_java(out, SOURCE, jars, "-nowarn")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> str:
    return streams_classpath(tmp_path_factory.mktemp("java-streams"))


class StreamsApp:
    """One run of StreamsEos as a process, its output in a log file."""

    def __init__(self, classpath: str, bootstrap: str, state_dir: Path, log: Path, *configs: str) -> None:
        self.log = log
        with log.open("w") as out:
            self.proc = subprocess.Popen(
                ["java", "-Dorg.apache.logging.log4j.level=WARN", "-cp", classpath, "StreamsEos",
                 bootstrap, APP_ID, str(state_dir), *APP_CONFIGS, *configs],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def alive(self) -> bool:
        """True while it runs; fails the test at once when it has died."""
        if self.proc.poll() is not None:
            raise AssertionError(f"the Streams application exited with {self.proc.returncode}:\n{self.text()[-5000:]}")
        return True

    def lines(self, prefix: str) -> list[str]:
        return [line for line in self.text().splitlines() if line.startswith(prefix)]

    def pause(self) -> None:
        self.alive()
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(30)

    def stop(self) -> None:
        """SIGTERM: StreamsEos closes the application (KafkaStreams.close) and ends."""
        self.alive()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)

    def ensure_dead(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


class Input:
    """Produces `input` records (a random key, a value 1-99, a random partition) and keeps each
    key's expected sum."""

    def __init__(self, bootstrap: str, seed: int) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.random = random.Random(seed)
        self.sums = dict.fromkeys(KEYS, 0)
        self.produced = 0
        self.lock = threading.Lock()

    def produce(self, key: str, value: int) -> None:
        with self.lock:
            self.producer.produce("input", key=key, value=str(value), partition=self.random.randrange(PARTITIONS))
            self.sums[key] += value
            self.produced += 1

    def produce_random(self, n: int) -> None:
        for _ in range(n):
            self.produce(self.random.choice(KEYS), self.random.randint(1, 99))
        self.flush()

    def feed(self, stop: threading.Event) -> None:
        """Records in flushed chunks of 20 a few ms apart until `stop` is set."""
        while not stop.is_set():
            self.produce_random(20)
            time.sleep(0.01)

    def flush(self) -> None:
        assert self.producer.flush(30) == 0


class Output:
    """`output` read at read_committed: the last committed sum of each key and every sum seen."""

    def __init__(self, bootstrap: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "output-reader",
                                  "isolation.level": "read_committed", "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest"})
        self.consumer.assign([TopicPartition("output", p, 0) for p in range(PARTITIONS)])
        self.last: dict[str, int] = {}
        self.seen: dict[str, list[int]] = {key: [] for key in KEYS}

    def read(self) -> dict[str, int]:
        """Reads what has come; returns the last sum of each key."""
        for msg in self.consumer.consume(1000, 0.2):
            if msg.error():
                raise KafkaException(msg.error())
            key, value = msg.key().decode(), int(msg.value())
            self.last[key] = value
            self.seen[key].append(value)
        return self.last

    def close(self) -> None:
        self.consumer.close()


def input_committed(bootstrap: str) -> bool:
    """The application's group has committed offsets at the end of every input partition."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": APP_ID, "enable.auto.commit": False})
    try:
        ends = [consumer.get_watermark_offsets(TopicPartition("input", p), timeout=10)[1] for p in range(PARTITIONS)]
        committed = consumer.committed([TopicPartition("input", p) for p in range(PARTITIONS)], timeout=10)
    except KafkaException:
        return False  # e.g. UNSTABLE_OFFSET_COMMIT while a transaction holds offsets pending
    finally:
        consumer.close()
    return [tp.offset for tp in committed] == ends


def transaction_open(bootstrap: str) -> bool:
    """Some partition the application writes has a last stable offset below its high watermark:
    a transaction of the application is open with records written."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    parts = [TopicPartition(t, p) for t in (REPARTITION, CHANGELOG, "output") for p in range(PARTITIONS)]

    def ends(level: IsolationLevel) -> list[int]:
        futures = admin.list_offsets({tp: OffsetSpec.latest() for tp in parts}, isolation_level=level)
        return [futures[tp].result(30).offset for tp in parts]

    return ends(IsolationLevel.READ_COMMITTED) != ends(IsolationLevel.READ_UNCOMMITTED)


def group_clients(bootstrap: str) -> set[str]:
    """The client.id of each instance with members in the application's group, once it is Stable."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.describe_consumer_groups([APP_ID]).values()
    group = future.result(30)
    if group.state != ConsumerGroupState.STABLE:
        return set()
    return {member.client_id.split("-StreamThread-")[0] for member in group.members}


def low_watermarks(bootstrap: str, topic: str) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[0] for p in range(PARTITIONS)]
    finally:
        consumer.close()


def topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)]).values()
    return {name: entry.value for name, entry in future.result(30).items()}


class Run:
    """One test's broker, input, output and application processes."""

    def __init__(self, compiled: str, broker: BrokerProcess, tmp_path: Path) -> None:
        self.compiled, self.bootstrap, self.tmp_path = compiled, broker.bootstrap, tmp_path
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for future in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in ("input", "output")]).values():
            future.result(30)
        self.source = Input(self.bootstrap, seed=7)
        self.output = Output(self.bootstrap)
        self.apps: list[StreamsApp] = []

    def start(self, state_dir: Path, *configs: str) -> StreamsApp:
        app = StreamsApp(self.compiled, self.bootstrap, state_dir, self.tmp_path / f"streams-{len(self.apps) + 1}.log",
                         *configs)
        self.apps.append(app)
        return app

    def close(self) -> None:
        for app in self.apps:
            app.ensure_dead()
        self.output.close()

    def first_output(self, app: StreamsApp) -> None:
        wait_until(lambda: app.alive() and bool(self.output.read()), "the first committed output", WAIT_S)

    @contextmanager
    def feeding(self) -> Iterator[None]:
        """More input goes on arriving, in small chunks, until the block ends."""
        stop = threading.Event()
        feeder = threading.Thread(target=self.source.feed, args=(stop,))
        feeder.start()
        try:
            yield
        finally:
            stop.set()
            feeder.join(WAIT_S)
        assert not feeder.is_alive()

    def in_transaction(self, app: StreamsApp) -> bool:
        """Stops `app` (SIGSTOP) if one of its transactions is open with records written, and says
        whether it did. The transaction must still be open once the application is stopped, so that
        it is not a commit under way when it was first seen open."""
        if not (self.source.produced >= 2000 and app.alive() and transaction_open(self.bootstrap)):
            return False
        app.pause()
        if transaction_open(self.bootstrap):
            return True
        app.resume()
        return False

    def finish(self, *running: StreamsApp) -> None:
        """More input, then every key's sum of all its input committed to `output`, and never more."""
        self.source.produce_random(1000)
        # Once the group has committed the end of every input partition, every record bound for the
        # repartition topic is in it, committed. One last record per key then goes through it
        # behind them all: when each key's sum counts it, the sum has counted all that came before.
        wait_until(lambda: all(app.alive() for app in running) and input_committed(self.bootstrap),
                   "the input's end committed", WAIT_S)
        for key in KEYS:
            self.source.produce(key, 1)
        self.source.flush()
        output, sums = self.output, self.source.sums

        def summed() -> bool:
            assert all(app.alive() for app in running)
            output.read()
            over = {key: values for key, values in output.seen.items() if values and max(values) > sums[key]}
            assert not over, f"committed sums above the input's: {over}, expected {sums}"
            return output.last == sums

        wait_until(summed, "every key's sum of all its input", WAIT_S)
        for app in running:
            assert app.lines("RESTORED sums "), "no store was restored from its changelog"
        # Streams purged what it consumed from the repartition topic (DeleteRecords).
        wait_until(lambda: all(low_watermarks(self.bootstrap, REPARTITION)), "the repartition topic purged", WAIT_S)
        # A clean close (SIGTERM): Streams commits what it has and leaves the group.
        for app in running:
            app.stop()
        for app in self.apps:
            assert not app.lines("UNCAUGHT"), app.text()[-5000:]
        # Nothing more was committed by the clean close.
        final = Output(self.bootstrap)
        try:
            wait_until(lambda: final.read() == sums, "the sums read again from the beginning", WAIT_S)
            assert {key: max(values) for key, values in final.seen.items()} == sums
        finally:
            final.close()


@pytest.mark.parametrize("state", ["kept", "wiped"])
def test_streams_exactly_once_v2_survives_kill_9(compiled: str, broker_factory, tmp_path: Path, state: str) -> None:  # type: ignore[no-untyped-def]
    run = Run(compiled, broker_factory(BROKER_SETTINGS), tmp_path)
    state_dir = tmp_path / "streams-state"
    try:
        run.source.produce_random(1500)
        first = run.start(state_dir)
        run.first_output(first)
        with run.feeding():
            wait_until(lambda: run.in_transaction(first), "a transaction open while the application consumes", WAIT_S)
            first.kill()
            if state == "wiped":
                shutil.rmtree(state_dir)
            second = run.start(state_dir)
        run.finish(second)
    finally:
        run.close()
    # Streams created its internal topics with the configs it asked for.
    assert topic_configs(run.bootstrap, CHANGELOG)["cleanup.policy"] == "compact"
    repartition = topic_configs(run.bootstrap, REPARTITION)
    assert (repartition["cleanup.policy"], repartition["retention.ms"]) == ("delete", "-1")


def test_streams_zombie_instance_is_fenced(compiled: str, broker_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """An instance stopped (SIGSTOP) with a transaction open until the group has dropped its members
    and handed its tasks to another instance (with other transactional ids, so no InitProducerId
    fences it), then resumed. Only the group can fence it (KIP-447): its consumer learns from a
    heartbeat that it was dropped and it aborts, or, when its stream thread commits first, the
    TxnOffsetCommit naming its old member and generation is refused (UNKNOWN_MEMBER_ID) and it
    aborts. Either way what it had processed must not be committed beside its successor's work;
    then it rejoins and the two instances share the tasks."""
    run = Run(compiled, broker_factory(BROKER_SETTINGS), tmp_path)
    try:
        run.source.produce_random(1500)
        # Its transaction outlives the pause, which the broker would otherwise abort.
        zombie = run.start(tmp_path / "state-a", "client.id=a", "transaction.timeout.ms=60000")
        run.first_output(zombie)
        with run.feeding():
            wait_until(lambda: run.in_transaction(zombie), "a transaction open while the application consumes", WAIT_S)
            successor = run.start(tmp_path / "state-b", "client.id=b")
        wait_until(lambda: successor.alive() and group_clients(run.bootstrap) == {"b"},
                   "the stopped instance's members out of the group", WAIT_S)
        zombie.resume()
        run.finish(zombie, successor)
    finally:
        run.close()
