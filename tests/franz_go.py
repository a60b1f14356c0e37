"""franz-go's own integration tests (pkg/kgo) against a real eosbroker (issue 14).

The module is fetched at a pinned version with the Go toolchain (`go mod download`, through the Go
module proxy), copied out of the read-only module cache and its kgo test binary compiled once
(Go's build cache makes later builds quick). The tests read the broker from KGO_SEEDS and, as
their helper_test.go says, KGO_TEST_RF (topics' replication factor: 1 on a single broker) and
KGO_TEST_RECORDS (records per ETL test; fewer keeps the run short). Every test of the package runs
but those in NOT_RUN, each with the reason; ALLOWED lists the ones that talk to a broker, and each
of them must pass (a test that vanished from the output counts as failed).

`python -m tests.franz_go` (what `make client-suites` runs) starts a broker at transaction.version
2 and then 1, runs the allow-list against each and prints the counts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

REPO = Path(__file__).resolve().parent.parent
MODULE: Final = "github.com/twmb/franz-go"
VERSION: Final = "v1.22.2"
WORK_DIR = REPO / "build" / "franz-go"

# The tests of pkg/kgo that talk to a broker, and pass against eosbroker (the package's unit
# tests, which need none, run too: the binary runs them whatever the broker).
ALLOWED: Final = (
    "TestUnknownGroupOffsetFetchPinned", "TestPing", "TestIssue1034", "TestSCRAMAuth", "TestSCRAMAuthBadCredentials",
    "TestIssue325", "TestConsumeTopicRetrieval", "TestConsumeTopicRetrieval_Many", "TestConsumeRegex",
    "Test848RegexBrokerResolves", "TestIssue337", "TestDirectPartitionPurge", "TestIssue434",
    "TestAddRemovePartitions", "TestPauseIssue489", "TestPauseIssueOct2023", "TestIssue523", "TestIssue648",
    "TestIssue810", "TestIssue865", "TestIssueFetchLargerThanBrokerMaxReadBytes", "TestPooling", "TestGroupSimple",
    "TestHookPollStart", "TestPollWaitStateNoUnderflow", "TestLookbackMilli", "TestConsumeMaxDecompressBatchBytes",
    "TestGroupETL", "TestTxnEtl",
    "TestClient_Produce", "TestIssue769", "TestIssueProduceSyncManualPartitionNegativeDoesNotPanic", "TestIssue831",
    "TestClient_ProduceLargeMessages",
    # share groups (KIP-932)
    "TestShareGroup", "TestShareGroupETL", "TestShareGroupAckOnClose", "TestShareGroupOffsetsAdmin",
    "TestConsumeRegexShareSkipsInternal",
)

NOT_RUN: Final[Mapping[str, str]] = {
    "TestIssueProduceBrokerTooOldFailsRecords": "needs a broker without Produce v3+; eosbroker advertises v0-2 "
                                                "(refused on use) so that old librdkafka enables compression",
}


# A second listener for TestSCRAMAuth and TestSCRAMAuthBadCredentials (KGO_TEST_SCRAM_SEEDS); the
# other tests use the PLAINTEXT one (KGO_SEEDS).
SCRAM_SETTINGS: Final = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                         "sasl.enabled.mechanisms": "SCRAM-SHA-256"}
# What every broker of these runs gets: no initial rebalance delay, as Kafka's own
# config/server.properties sets "for development and testing" (the broker franz-go's CI runs). The
# group ETLs start their consumers in a new group and rebalance it as more join and leave: each
# group's first join would otherwise wait Kafka's default 3 s.
SETTINGS: Final = {"group.initial.rebalance.delay.ms": "0"}
# Tests run at once (go test's -parallel; GOMAXPROCS, 2 here, by default). Nearly every broker test
# of pkg/kgo calls t.Parallel() and mostly waits (the V2 run takes ~22 s of client CPU in ~90 s).
PARALLEL: Final = 4
SCRAM_USER: Final = ("franz", "franz-secret")


def scram_env(plaintext: str, sasl_plaintext: str) -> dict[str, str]:
    """Create the SCRAM-SHA-256 user (AlterUserScramCredentials over PLAINTEXT); the variables
    that point franz-go's SCRAM tests at the SASL_PLAINTEXT listener."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    user, password = SCRAM_USER
    admin = AdminClient({"bootstrap.servers": plaintext})
    upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                          password.encode())
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=30)
    return {"KGO_TEST_SCRAM": f"{user}:{password}:256", "KGO_TEST_SCRAM_SEEDS": sasl_plaintext}


@dataclass(slots=True)
class SuiteResult:
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    output: str = ""


def build(work_dir: Path = WORK_DIR) -> Path:
    """Fetch the pinned module and compile pkg/kgo's tests; the binary's path."""
    go = shutil.which("go")
    if go is None:
        raise FileNotFoundError("the Go toolchain (go) is not on PATH")
    binary = work_dir / f"kgo-{VERSION}.test"
    if binary.exists():
        return binary
    fetched = subprocess.run([go, "mod", "download", "-json", f"{MODULE}@{VERSION}"], capture_output=True,
                             text=True, check=True, timeout=600, cwd=tempfile.gettempdir())
    source = Path(json.loads(fetched.stdout)["Dir"])
    copy = work_dir / f"franz-go-{VERSION}"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(source, copy)
    for path in copy.rglob("*"):  # the module cache is read-only; go test writes nothing, but cleanup must
        path.chmod(path.stat().st_mode | 0o200)
    subprocess.run([go, "test", "-c", "-o", str(binary), "./pkg/kgo"], cwd=copy, check=True, timeout=1200,
                   capture_output=True)
    return binary


def run(binary: Path, bootstrap: str, records: int = 5000, timeout_s: float = 600.0,
        tests: tuple[str, ...] = ALLOWED, extra_env: Mapping[str, str] | None = None) -> SuiteResult:
    """Run the tests against the broker at bootstrap: by default every test but NOT_RUN (the
    package's unit tests too), else only those named."""
    env = os.environ | {"KGO_SEEDS": bootstrap, "KGO_TEST_RF": "1", "KGO_TEST_RECORDS": str(records),
                        "KGO_LOG_LEVEL": "none"} | dict(extra_env or {})
    skip = "^(" + "|".join(NOT_RUN) + ")$"
    only = [] if tests == ALLOWED else ["-test.run", "^(" + "|".join(tests) + ")$"]
    done = subprocess.run([str(binary), "-test.v", "-test.skip", skip, *only, "-test.timeout", f"{int(timeout_s)}s",
                           "-test.parallel", str(PARALLEL)],
                          cwd=binary.parent / f"franz-go-{VERSION}" / "pkg" / "kgo", env=env, capture_output=True,
                          text=True, timeout=timeout_s + 60)
    result = SuiteResult(output=done.stdout + done.stderr)
    for outcome, name in re.findall(r"^--- (PASS|FAIL|SKIP): (\S+)", done.stdout, flags=re.M):
        {"PASS": result.passed, "FAIL": result.failed, "SKIP": result.skipped}[outcome].append(name)
    missing = [t for t in tests if t not in result.passed + result.failed + result.skipped]
    result.failed += [f"{t} (did not run)" for t in missing]
    if done.returncode != 0 and not result.failed:
        result.failed.append(f"the test binary exited with {done.returncode}")
    return result


def main() -> int:
    from tests.broker_process import BrokerProcess

    binary = build()
    status = 0
    for level in ("2", "1"):
        with tempfile.TemporaryDirectory() as tmp, BrokerProcess(
                Path(tmp) / "data", SETTINGS | SCRAM_SETTINGS | {"transaction.version": level}) as broker:
            broker.start()
            env = scram_env(broker.bootstrap, broker.bootstrap_of("SASL_PLAINTEXT"))
            result = run(binary, broker.bootstrap, records=20000, extra_env=env)
        print(f"transaction.version={level}: {len(result.passed)} passed, {len(result.failed)} failed, "
              f"{len(result.skipped)} skipped; not run: {len(NOT_RUN)} ({', '.join(NOT_RUN)})")
        for name in result.failed:
            print(f"  FAILED {name}")
        status |= bool(result.failed)
    return status


if __name__ == "__main__":
    sys.exit(main())
