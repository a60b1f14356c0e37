"""EmbeddedBroker: a real eosbroker in its own process, for users' tests and scripts.

    from broker.embedded import EmbeddedBroker
    with EmbeddedBroker() as b:
        b.create_topic("orders", partitions=3)
        run_my_pipeline(bootstrap_servers=b.bootstrap_servers)

The broker runs as `python -m broker` under the same interpreter, on a free loopback port, with its
data and its log file (`broker.log`) in a temporary directory. Its settings default to TEST_SETTINGS:
one partition for each internal topic (Kafka's 50 cost start-up time and buy nothing in a test) and
no initial rebalance delay (a consumer group forms at once). `close()` stops it with SIGTERM, waits,
and then raises BrokerMisbehaved if it exited non-zero (other than by a `kill()` of the test's own),
or logged an ERROR line or a traceback that `expect_log(regex)` did not declare.

This module imports no part of the broker itself and nothing heavier than the standard library until
create_topic is called: the pytest plugin (broker/pytest_plugin.py) imports it in every test run.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, AnyStr

__all__ = ("LISTENING", "TEST_SETTINGS", "BrokerMisbehaved", "EmbeddedBroker", "create_topic", "end_process",
           "recv_exact", "request", "unexpected_problems")

TEST_SETTINGS: Mapping[str, str] = {
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
}
LOG_TAIL_LINES = 50
LISTENING = re.compile(r"listening on [^ ]+:(\d+)")
# broker/__main__.py's format: "%(asctime)s %(levelname)s %(name)s: %(message)s"
_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?P<level>[A-Z]+) ")
_BAD_LEVELS = {"ERROR", "CRITICAL"}
# Output that means something broke at any level: a traceback, an exception in a __del__ or a
# callback that Python printed to stderr, a fatal error in native code, a leaked socket or file
# (the broker runs with ResourceWarning shown).
_BAD_OUTPUT = re.compile(
    r"Traceback \(most recent call last\)|^Exception ignored|^Fatal Python error|ResourceWarning: unclosed", re.M)


def log_records(lines: list[str]) -> Iterator[str]:
    """Each log record with its continuation lines (a logged traceback follows its record); what
    Python wrote to stderr outside logging joins the record before it."""
    record: list[str] = []
    for line in lines:
        if _RECORD.match(line) and record:
            yield "".join(record)
            record = []
        record.append(line)
    if record:
        yield "".join(record)


def is_problem(record: str) -> bool:
    m = _RECORD.match(record)
    return bool(m and m.group("level") in _BAD_LEVELS or _BAD_OUTPUT.search(record))


def unexpected_problems(lines: list[str], expected: list[re.Pattern[str]]) -> list[str]:
    """Each ERROR/CRITICAL record or traceback in the log that no `expected` pattern matches."""
    return [r for r in log_records(lines) if is_problem(r) and not any(p.search(r) for p in expected)]


def end_process(proc: subprocess.Popen[AnyStr], sig: signal.Signals) -> list[str]:
    """Send `sig` and wait. Returns the exits it should not have had: anything but 0 after SIGTERM,
    and an exit it took by itself before (a crash the test did not cause)."""
    if proc.poll() is not None:
        return [f"the broker exited by itself with code {proc.returncode}"]
    proc.send_signal(sig)
    proc.send_signal(signal.SIGCONT)  # a paused (SIGSTOP) process takes its SIGTERM only once resumed
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        return [f"the broker did not end within 20 s of {sig.name}"]
    if sig == signal.SIGTERM and proc.returncode != 0:
        return [f"the broker exited with code {proc.returncode} after SIGTERM (expected 0)"]
    return []


class BrokerMisbehaved(AssertionError):
    """The broker failed to start, exited badly, or logged an error nobody declared."""


def _child_env() -> dict[str, str]:
    """Run the same broker code as this process: when the package is not installed in a site
    directory (a source checkout on sys.path), the child needs its root on PYTHONPATH too."""
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONWARNINGS="always::ResourceWarning")
    site_dirs = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    if root not in site_dirs:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    return env


class EmbeddedBroker:
    """One broker process; `directory` (default: a new temporary one, removed by a clean close())
    holds `data/` and `broker.log`. After kill() or stop(), start() or restart() brings it back on
    the same port with the same data."""

    def __init__(self, directory: str | os.PathLike[str] | None = None, settings: Mapping[str, str] | None = None,
                 start_timeout: float = 30.0) -> None:
        self._own_directory = directory is None
        self.directory = Path(tempfile.mkdtemp(prefix="eosbroker-") if directory is None else directory)
        self.data_dir = self.directory / "data"
        self.log_path = self.directory / "broker.log"
        self.settings = {**TEST_SETTINGS, **(settings or {})}
        self.start_timeout = start_timeout
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._ended = True  # no process running that stop() or kill() should end
        self.bad_exits: list[str] = []
        self.expected: list[re.Pattern[str]] = []

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close(check=exc_info[0] is None)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> EmbeddedBroker:
        """Start the process and return once it listens (its port is read from the log)."""
        assert not self.running(), "the broker is already running"
        cmd = [sys.executable, "-m", "broker", "--host", "127.0.0.1", "--port", str(self.port),
               "--data-dir", str(self.data_dir)]
        for key, value in self.settings.items():
            cmd += ["--set", f"{key}={value}"]
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            log_start = log.tell()
            # cwd: a user's own `broker` directory must not shadow this package in `python -m broker`.
            self.proc = subprocess.Popen(cmd, cwd=self.directory, env=_child_env(), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT)
        self._ended = False
        self.port = self._wait_listening(log_start)
        return self

    def _wait_listening(self, log_start: int) -> int:
        deadline = time.monotonic() + self.start_timeout
        with open(self.log_path, "rb") as log:
            log.seek(log_start)
            pending = b""
            while time.monotonic() < deadline:
                pending += log.read()
                m = LISTENING.search(pending.decode(errors="replace"))
                if m:
                    return int(m.group(1))
                if not self.running():
                    break
                time.sleep(0.005)
        self._end(signal.SIGKILL)
        self.bad_exits.clear()  # the exception says it all
        raise BrokerMisbehaved(f"the broker did not start (log {self.log_path}):\n{self.log_tail()}")

    def _end(self, sig: signal.Signals) -> None:
        if self.proc is not None and not self._ended:
            self._ended = True
            self.bad_exits += end_process(self.proc, sig)

    def stop(self) -> None:
        """SIGTERM, and wait for the clean shutdown."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL: a crash (no flush, no clean shutdown marker); restart() recovers the same data."""
        self._end(signal.SIGKILL)

    def restart(self) -> EmbeddedBroker:
        """Stop (SIGTERM) if running, then start again on the same port and data."""
        self.stop()
        return self.start()

    def expect_log(self, pattern: str) -> None:
        """Declare an ERROR line or traceback matching `pattern` as one the test provokes on purpose."""
        self.expected.append(re.compile(pattern))

    def log_lines(self) -> list[str]:
        try:
            return self.log_path.read_text(errors="replace").splitlines(keepends=True)
        except FileNotFoundError:
            return []

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return "".join(self.log_lines()[-lines:])

    def problems(self) -> list[str]:
        """Bad exits, then each ERROR/CRITICAL record or traceback that no expect_log() matches."""
        return self.bad_exits + unexpected_problems(self.log_lines(), self.expected)

    def check(self) -> None:
        found = self.problems()
        if found:
            raise BrokerMisbehaved(f"the broker misbehaved (log {self.log_path}); declare what the test provokes "
                                   "with expect_log(regex):\n" + "\n".join(found)
                                   + f"\n--- last lines of the log ---\n{self.log_tail()}")

    def close(self, check: bool = True) -> None:
        """Stop, check (unless told not to), and remove a temporary directory of our own once all is well."""
        self.stop()
        if check:
            self.check()
            if self._own_directory:
                shutil.rmtree(self.directory, ignore_errors=True)

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None) -> None:
        """CreateTopics through the Kafka protocol; raises protocol.errors.KafkaError on an error code."""
        create_topic(self.bootstrap_servers, name, partitions, config)


def create_topic(bootstrap_servers: str, name: str, partitions: int = 1,
                 config: Mapping[str, str] | None = None) -> None:
    from kio.schema.create_topics.v7.request import CreateTopicsRequest

    from protocol.build import build
    from protocol.errors import ErrorCode, KafkaError

    topic = {"name": name, "num_partitions": partitions, "replication_factor": -1,
             "configs": [{"name": k, "value": v} for k, v in (config or {}).items()]}
    response = request(bootstrap_servers, build(CreateTopicsRequest, {"topics": [topic], "timeout": 30_000}))
    (result,) = response.topics
    if result.error_code != ErrorCode.none:
        raise KafkaError(result.error_code, f"CreateTopics {name!r}: {result.error_message or result.error_code.name}")


# Dynamic: a request entity of any API, answered with that API's response entity.
def request(bootstrap_servers: str, entity: Any, timeout: float = 30.0) -> Any:
    """Send one request on a new connection and return the response body."""
    from protocol.codec import decode_response, encode_request

    host, port = bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(encode_request(entity, correlation_id=1, client_id="eosbroker-embedded"))
        (size,) = struct.unpack(">i", recv_exact(sock, 4))
        correlation_id, body = decode_response(recv_exact(sock, size), entity.__api_key__, entity.__version__)
    assert correlation_id == 1, f"response for correlation id {correlation_id}, expected 1"
    return body


def recv_exact(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError(f"the broker closed the connection after {len(out)} of {n} bytes")
        out += chunk
    return bytes(out)
