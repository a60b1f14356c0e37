"""Issue 36: the admin answers Kafka's tools got "unsupported" for, with the tools themselves and
raw requests. Each answer was checked side by side with a Kafka 4.4 node (bench/servers.py's
start_kafka) for the same requests: kafka-metadata-quorum prints a single-voter quorum led by the
broker (Kafka's combined node prints the same shape, its controller listener for the endpoint and
its metadata log's offsets where eosbroker, which has no such log, gives -1); kafka-reassign-
partitions with log_dirs and AlterReplicaLogDirs get Kafka's per-partition codes; kafka-cluster
unregister gets Kafka's BROKER_ID_NOT_REGISTERED message, and a refusal for the running broker;
remove-controller and AddRaftVoter get Kafka's refusals for a quorum of static voters, and
--bootstrap-controller a Kafka broker's MISMATCHED_ENDPOINT_TYPE."""

from __future__ import annotations

import datetime
import json
import re
import uuid
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from kio.schema.add_raft_voter.v1.request import AddRaftVoterRequest, Listener
from kio.schema.alter_replica_log_dirs.v2.request import (
    AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirTopic,
)
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest
from kio.schema.describe_quorum.v2.request import DescribeQuorumRequest, PartitionData, TopicData
from kio.static.primitive import i8, i32, u16

from protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess
from tests.e2e.test_kafka_tools import produce, tool
from tests.kafka_tools import run_tool
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e
E = ErrorCode


@pytest.fixture
def broker(module_broker: BrokerProcess) -> BrokerProcess:
    """The tests here share one broker (tests/e2e/conftest.py's module_broker): none restarts it,
    and each names topics, groups and ids of its own."""
    return module_broker


def fields(out: str) -> dict[str, str]:
    """kafka-metadata-quorum describe --status: "Name:   value" lines."""
    return {key: value.strip() for key, _, value in (line.partition(":") for line in out.splitlines())}


def test_metadata_quorum_describes_a_single_voter_quorum(broker: BrokerProcess) -> None:
    status = fields(tool(broker, "kafka-metadata-quorum", "describe", "--status"))
    cluster_id = tool(broker, "kafka-cluster", "cluster-id").strip().removeprefix("Cluster ID: ")
    directory_id = re.search(r"^directory\.id=(\S+)$", (broker.data_dir / "meta.properties").read_text(), re.M)
    assert directory_id is not None
    assert {k: status[k] for k in ("ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag",
                                   "MaxFollowerLagTimeMs", "CurrentObservers")} == {
        "ClusterId": cluster_id, "LeaderId": "1", "LeaderEpoch": "0", "HighWatermark": "-1",
        "MaxFollowerLag": "0", "MaxFollowerLagTimeMs": "0", "CurrentObservers": "[]"}, status
    assert json.loads(status["CurrentVoters"]) == [
        {"id": 1, "directoryId": directory_id[1], "endpoints": [f"PLAINTEXT://{broker.bootstrap}"]}]

    header, *rows = tool(broker, "kafka-metadata-quorum", "describe", "--replication").splitlines()
    assert header.split() == ["NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                              "LastCaughtUpTimestamp", "Status"]
    [row] = [line.split() for line in rows]
    assert row[:4] == ["1", directory_id[1], "-1", "0"] and row[6] == "Leader", row
    assert int(row[4]) == int(row[5]) > 0  # the leader's times are the answer's "now", as Kafka's


def describe_quorum(broker: BrokerProcess, topic: str, partitions: list[int]) -> object:
    with RawClient(broker.bootstrap) as client:
        return client.request(DescribeQuorumRequest(topics=(
            TopicData(topic_name=topic, partitions=tuple(PartitionData(partition_index=i32(p)) for p in partitions)),)))


def test_describe_quorum_of_another_partition_is_unknown(broker: BrokerProcess) -> None:
    """Kafka's hasValidTopicPartition: exactly __cluster_metadata-0, else each partition named is
    UNKNOWN_TOPIC_OR_PARTITION with Kafka's message, and no nodes."""
    for topic, partitions in (("__cluster_metadata", [1]), ("other", [0]), ("__cluster_metadata", [0, 0])):
        r = describe_quorum(broker, topic, partitions)
        assert r.error_code is E.none and r.nodes == ()  # type: ignore[attr-defined]
        [t] = r.topics  # type: ignore[attr-defined]
        assert [(p.partition_index, p.error_code, p.error_message, p.current_voters) for p in t.partitions] == [
            (p, E.unknown_topic_or_partition, "This server does not host this topic-partition.", ())
            for p in partitions]


def reassign(broker: BrokerProcess, tmp_path: Path, partition: int, log_dir: str, action: str) -> CompletedProcess[str]:
    plan = tmp_path / f"move-{partition}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "moves", "partition": partition, "replicas": [1], "log_dirs": [log_dir]}]}))
    return run_tool("kafka-reassign-partitions", "--bootstrap-server", broker.bootstrap, action,
                    "--reassignment-json-file", str(plan))


def test_reassign_partitions_with_log_dirs(broker: BrokerProcess, tmp_path: Path) -> None:
    """The one log dir is where every replica is already: the move is done at once (--verify says so);
    another dir is LOG_DIR_NOT_FOUND, which the tool reports as Kafka's does."""
    tool(broker, "kafka-topics", "--create", "--topic", "moves", "--partitions", "2")
    produce(broker, "moves", 3)
    log_dir = str(broker.data_dir.resolve())
    started = reassign(broker, tmp_path, 0, log_dir, "--execute")
    assert started.returncode == 0 and f"Successfully started moving log directory to {log_dir} for replica " \
        "moves-0 with broker 1" in started.stdout, started.stdout + started.stderr
    verified = reassign(broker, tmp_path, 0, log_dir, "--verify")
    assert "Reassignment of replica moves-0-1 completed successfully." in verified.stdout, verified.stdout
    refused = reassign(broker, tmp_path, 1, "/no/such/dir", "--execute")
    assert refused.returncode != 0 and "Error: Failed to alter dir for moves-1-1" in refused.stdout + refused.stderr


def test_alter_replica_log_dirs_answers_as_kafka(broker: BrokerProcess) -> None:
    """Per partition, in Kafka's order of checks (the same request to a Kafka 4.4 node gives the same
    codes): a name too long for a future dir, a dir not in log.dirs, a partition that does not exist,
    then NONE for a replica already in that dir; a partition named twice takes its last answer."""
    tool(broker, "kafka-topics", "--create", "--topic", "dirs", "--partitions", "2")
    here = str(broker.data_dir.resolve())

    def topics(*named: tuple[str, list[int]]) -> tuple[AlterReplicaLogDirTopic, ...]:
        return tuple(AlterReplicaLogDirTopic(name=n, partitions=tuple(i32(p) for p in ps)) for n, ps in named)

    request = AlterReplicaLogDirsRequest(dirs=(
        AlterReplicaLogDir(path=here, topics=topics(("dirs", [0, 1, 7]), ("nope", [0]), ("x" * 240, [0]))),
        AlterReplicaLogDir(path="/elsewhere", topics=topics(("dirs", [0]), ("nope", [1]))),
        AlterReplicaLogDir(path=here + "/", topics=topics(("dirs", [1]))),
    ))
    with RawClient(broker.bootstrap) as client:
        r = client.request(request)
    assert {(t.topic_name, p.partition_index): p.error_code for t in r.results for p in t.partitions} == {
        ("dirs", 0): E.log_dir_not_found, ("dirs", 1): E.log_dir_not_found, ("dirs", 7): E.unknown_topic_or_partition,
        ("nope", 0): E.unknown_topic_or_partition, ("nope", 1): E.log_dir_not_found,
        ("x" * 240, 0): E.invalid_topic_exception}
    with RawClient(broker.bootstrap) as client:
        r = client.request(AlterReplicaLogDirsRequest(dirs=(
            AlterReplicaLogDir(path=here, topics=topics(("dirs", [1]))),)))
    assert [(t.topic_name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.results] == [
        ("dirs", [(1, E.none)])]


def test_cluster_unregister(broker: BrokerProcess) -> None:
    """An unknown id gets Kafka's BROKER_ID_NOT_REGISTERED message; the running broker is refused
    (Kafka 4.4 unregisters a live node, which then lists no broker until it restarts)."""
    unknown = unregister(broker, 5)
    assert ("org.apache.kafka.common.errors.BrokerIdNotRegisteredException: Broker ID 5 is not currently "
            "registered") in unknown, unknown
    running = unregister(broker, 1)
    assert ("org.apache.kafka.common.errors.InvalidRequestException: Broker ID 1 is running: a live broker "
            "stays registered; stop it first, then unregister it") in running, running
    assert tool(broker, "kafka-cluster", "list-endpoints").splitlines()[1].split()[0] == "1"


def unregister(broker: BrokerProcess, node_id: int) -> str:
    """The output of a kafka-cluster unregister that must fail."""
    out = run_tool("kafka-cluster", "unregister", "--bootstrap-server", broker.bootstrap, "--id", str(node_id))
    assert out.returncode != 0, out.stdout + out.stderr
    return out.stdout + out.stderr


def test_the_quorum_cannot_be_changed(broker: BrokerProcess) -> None:
    """kafka-metadata-quorum remove-controller and AddRaftVoter get Kafka 4.4's answers for a quorum of
    static voters (the same three requests to a Kafka 4.4 node give the same codes and messages)."""
    out = run_tool("kafka-metadata-quorum", "--bootstrap-server", broker.bootstrap, "remove-controller",
                   "--controller-id", "1", "--controller-directory-id", "bFE5Xn7_RcaxhYfqboO0Yw")
    printed = out.stdout + out.stderr
    assert out.returncode != 0 and ("UnsupportedVersionException: Cluster doesn't support removing voter because "
                                    "the kraft.version feature is 0") in printed, printed
    cluster_id = tool(broker, "kafka-cluster", "cluster-id").strip().removeprefix("Cluster ID: ")
    answers = []
    listeners = (Listener(name="CONTROLLER", host="127.0.0.1", port=u16(1)),)
    with RawClient(broker.bootstrap) as client:
        for directory_id, named in ((uuid.uuid4(), None), (None, None), (uuid.uuid4(), "another")):
            r = client.request(AddRaftVoterRequest(
                cluster_id=named, timeout=datetime.timedelta(seconds=1), voter_id=i32(2),
                voter_directory_id=directory_id, listeners=listeners))
            answers.append((r.error_code, r.error_message))
    assert answers == [
        (E.unsupported_version, "Cluster doesn't support adding voter because the kraft.version feature is 0"),
        (E.invalid_request, "Add voter request didn't include a valid voter"),
        (E.inconsistent_cluster_id, f'The given id "another" doesn\'t match the cluster id "{cluster_id}"')]


def test_describe_cluster_for_controllers_is_answered_as_a_kafka_broker_answers(broker: BrokerProcess) -> None:
    """kafka-metadata-quorum --bootstrap-controller (and any Admin with bootstrap.controllers) asks a
    broker listener for controller endpoints: Kafka 4.4's broker answers MISMATCHED_ENDPOINT_TYPE."""
    answers = []
    with RawClient(broker.bootstrap) as client:
        for endpoint_type in (2, 3):
            r = client.request(DescribeClusterRequest(include_cluster_authorized_operations=False,
                                                      endpoint_type=i8(endpoint_type)))
            answers.append((r.error_code, r.error_message, r.endpoint_type))
    assert answers == [
        (E.mismatched_endpoint_type,
         "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER", 1),
        (E.unsupported_endpoint_type, "Unsupported endpoint type 3", 1)]
    out = run_tool("kafka-metadata-quorum", "--bootstrap-controller", broker.bootstrap, "describe", "--status")
    assert out.returncode != 0 and ("MismatchedEndpointTypeException: The request was sent to an endpoint of type "
                                    "BROKER, but we wanted an endpoint of type CONTROLLER") in out.stdout + out.stderr
