"""Apache Kafka's command-line tools, run as the shell scripts of a Kafka distribution would run
them (`java -cp <jars> <main class> args`), from the jars `make kafka-tools` fetches into
tools/kafka-tools/. Each script name maps to its main class in kafka-tools.

The first tool run archives the classes it loaded (Java's dynamic class data sharing,
-XX:ArchiveClassesAtExit) in build/cds/, which costs that run ~3 s. Every later run, whichever the
tool, maps the archive (the admin client's classes are most of any tool's) and starts in ~0.9 s
instead of ~1.6 s; the suite runs the tools ~130 times. The JVM ignores an unusable archive."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Final

REPO = Path(__file__).resolve().parent.parent
TOOLS_DIR = REPO / "tools" / "kafka-tools"
CDS_DIR = REPO / "build" / "cds"

MAIN_CLASSES: Final[Mapping[str, str]] = {
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",
    "kafka-e2e-latency": "org.apache.kafka.tools.EndToEndLatency",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-replica-verification": "org.apache.kafka.tools.ReplicaVerificationTool",
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    # no script in Kafka's bin/: its system tests run the class with kafka-run-class.sh
    "transactional-message-copier": "org.apache.kafka.tools.TransactionalMessageCopier",
}


def tools_classpath() -> str:
    jars = sorted(TOOLS_DIR.glob("*.jar"))
    if not any(j.name.startswith("kafka-tools-") for j in jars):
        raise FileNotFoundError(f"no kafka-tools jar in {TOOLS_DIR}: run `make kafka-tools`")
    return os.pathsep.join(str(j) for j in jars)


def run_tool(
    tool: str, *args: str, input: str | None = None, timeout: float = 120.0, check: bool = False,
    java_options: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """Run one Kafka CLI tool by its script name (kafka-topics, ...); stdout and stderr are text.
    `java_options` go to the JVM, as KAFKA_OPTS would (-Dname=value system properties)."""
    java = shutil.which("java")
    if java is None:
        raise FileNotFoundError("java is not on PATH")
    classpath, main_class = tools_classpath(), MAIN_CLASSES[tool]
    archive = _cds_archive(java, classpath)
    dump = None if archive.exists() else archive.with_name(f"{archive.name}.{os.getpid()}.{id(args)}.tmp")
    # -Xlog:cds*=off: the dump's warnings (classes it skips) would otherwise go to stdout.
    share = f"-XX:SharedArchiveFile={archive}" if dump is None else f"-XX:ArchiveClassesAtExit={dump}"
    cmd = [java, "-Xshare:auto", share, "-Xlog:cds*=off", "-XX:TieredStopAtLevel=1", *java_options, "-cp", classpath,
           main_class, *args]
    try:
        done = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout,
                              stdin=None if input is not None else subprocess.DEVNULL, env=_tool_env())
    except subprocess.TimeoutExpired:
        if dump is not None:
            dump.unlink(missing_ok=True)  # perhaps killed mid-dump
        raise
    if dump is not None and dump.exists():
        os.replace(dump, archive)  # only a whole archive takes the name
    if check:
        done.check_returncode()
    return done


def _tool_env() -> dict[str, str]:
    """The tools get C1 on their command line; JDK_JAVA_OPTIONS (set for the suite's other JVMs) would add
    a "NOTE: Picked up JDK_JAVA_OPTIONS" line to the stderr the tests read as the tool's output."""
    return {k: v for k, v in os.environ.items() if k != "JDK_JAVA_OPTIONS"}


def _cds_archive(java: str, classpath: str) -> Path:
    """Where the tools' class archive lives: keyed by the JVM and the jars, which it is only valid for."""
    jvm = os.path.realpath(java)
    key = hashlib.sha256(f"{jvm}\0{os.stat(jvm).st_mtime_ns}\0{classpath}".encode()).hexdigest()[:16]
    CDS_DIR.mkdir(parents=True, exist_ok=True)
    return CDS_DIR / f"kafka-tools-{key}.jsa"
