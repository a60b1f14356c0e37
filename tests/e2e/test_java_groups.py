"""The stock Java kafka-clients (Spark's version) in a consumer group: FindCoordinator v4+
batched, JoinGroup v9, SyncGroup v5, OffsetCommit/OffsetFetch v9 and the admin group APIs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_consumer_groups import SETTINGS
from tests.e2e.test_java_clients import classpath, compile_java
from tests.e2e.txn_clients import create_topics

pytestmark = pytest.mark.e2e

SOURCE = Path(__file__).parent / "java" / "GroupCheck.java"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> str:
    return compile_java(tmp_path_factory.mktemp("java-groups"), SOURCE, classpath())


def test_java_consumer_group(compiled: str, broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    create_topics(broker.bootstrap, ["java-group-topic"], 6)
    proc = subprocess.run(
        ["java", "-cp", compiled, "GroupCheck", broker.bootstrap, "java-group-topic", "600"],
        capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    checks = dict(line.split()[1:3] for line in proc.stdout.splitlines() if line.startswith("CHECK "))
    assert checks == {
        "split": "3/3", "consumed": "600", "after_leave": "6", "committed_total": "600",
        "admin_committed_total": "600", "state": "Empty", "listed": "true", "deleted": "true",
        "internal_hidden": "true", "internal_listed": "true",
    }
