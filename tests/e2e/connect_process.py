"""Apache Kafka Connect's own processes (a distributed worker, MirrorMaker 2 in dedicated mode) run
from the jars `make kafka-connect` fetches into tools/kafka-connect/ (Connect 4.3.1, the newest
release of connect-file and connect-mirror the registry serves), as Kafka's bin/ scripts would run
them: `java -cp <jars> <main class> <properties file>`, with C1 only (as tests/kafka_tools.py does:
they are short-lived and C2 would only add compile threads on a loaded machine). Their log4j output
goes to a file the tests read for errors."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.broker_process import REPO
from tests.kafka_tools import _tool_env

CONNECT_DIR = REPO / "tools" / "kafka-connect"

# WARN and above from everything; the worker's start line at INFO, to know it started.
LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n%throwable
rootLogger.level = warn
rootLogger.appenderRef.out.ref = out
logger.herder.name = org.apache.kafka.connect.runtime.distributed.DistributedHerder
logger.herder.level = info
"""

# What a worker or MirrorMaker logs when the broker answered it with an error it does not expect.
BROKER_ERRORS = re.compile(r"^\[[^]]*\] ERROR |UNKNOWN_SERVER_ERROR|Unexpected error code|CorruptRecord"
                           r"|InvalidRequestException|UnsupportedVersion", re.MULTILINE)

# What MirrorMaker logs at ERROR when its checkpoint task's scheduled admin call races its own admin
# client's close during the SIGTERM shutdown (MirrorCheckpointTask.refreshIdleConsumerGroupOffset):
# the client's, not an answer of the broker.
OWN_SHUTDOWN = "Cannot accept new calls when AdminClient is closing"


def free_port() -> int:
    """A loopback port nothing listens on now, for a REST listener (Connect advertises the
    configured port, so 0 would be advertised as is)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def connect_classpath() -> str:
    jars = sorted(CONNECT_DIR.glob("*.jar"))
    if not any(j.name.startswith("connect-mirror-") for j in jars):
        pytest.fail(f"no Connect jars in {CONNECT_DIR}: run `make kafka-connect`")
    return ":".join(str(j) for j in jars)


def write_properties(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return path


class ConnectProcess:
    """One JVM running `main_class` on a properties file; stdout and stderr go to `log`."""

    def __init__(self, main_class: str, properties: Path, log: Path) -> None:
        java = shutil.which("java")
        if java is None:
            pytest.fail("java is not on PATH")
        log4j = log.with_suffix(".log4j2.properties")
        log4j.write_text(LOG4J2)
        self.log = log
        with log.open("a") as out:
            self.proc = subprocess.Popen(
                [java, "-XX:TieredStopAtLevel=1", f"-Dlog4j2.configurationFile={log4j}",
                 "-cp", connect_classpath(), main_class, str(properties)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=_tool_env())

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def alive(self) -> bool:
        """True while it runs; fails the test at once when it has died."""
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.log.name}: exited with {self.proc.returncode}:\n{self.text()[-5000:]}")
        return True

    def errors(self) -> list[str]:
        text = self.text()
        found = [m.group(0) + text[m.end():m.end() + 400] for m in BROKER_ERRORS.finditer(text)]
        return [error for error in found if OWN_SHUTDOWN not in error]

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(30)

    def stop(self) -> None:
        """SIGTERM, as Ctrl-C: the process closes its herder, and after a minute is killed."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()


def rest(url: str, method: str = "GET", body: Any = None) -> Any:
    """One request to a Connect REST API; the decoded JSON answer, or None on a connection error
    or a 404/409 (the worker is starting or rebalancing)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            text = answer.read().decode()
    except urllib.error.HTTPError as error:
        if error.code in (404, 409, 503):
            return None
        raise AssertionError(f"{method} {url}: {error.code} {error.read().decode(errors='replace')}") from error
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None
    return json.loads(text) if text else {}
