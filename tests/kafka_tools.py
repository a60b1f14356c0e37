"""Apache Kafka's command-line tools, run as the shell scripts of a Kafka distribution would run
them (`java -cp <jars> <main class> args`), from the jars `make kafka-tools` fetches into
tools/kafka-tools/. Each script name maps to its main class in kafka-tools (or core)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Final

REPO = Path(__file__).resolve().parent.parent
TOOLS_DIR = REPO / "tools" / "kafka-tools"

MAIN_CLASSES: Final[Mapping[str, str]] = {
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-e2e-latency": "org.apache.kafka.tools.EndToEndLatency",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
}


def tools_classpath() -> str:
    jars = sorted(TOOLS_DIR.glob("*.jar"))
    if not any(j.name.startswith("kafka-tools-") for j in jars):
        raise FileNotFoundError(f"no kafka-tools jar in {TOOLS_DIR}: run `make kafka-tools`")
    return os.pathsep.join(str(j) for j in jars)


def run_tool(
    tool: str, *args: str, input: str | None = None, timeout: float = 120.0, check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run one Kafka CLI tool by its script name (kafka-topics, ...); stdout and stderr are text."""
    java = shutil.which("java")
    if java is None:
        raise FileNotFoundError("java is not on PATH")
    cmd = [java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", tools_classpath(),
           MAIN_CLASSES[tool], *args]
    return subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout,
                          check=check, stdin=None if input is not None else subprocess.DEVNULL)
