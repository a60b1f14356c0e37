"""`python -m broker` start-up as an operator meets it: each failure prints one line naming its cause,
exits non-zero without a traceback and leaves the disk as it was; one broker per data directory;
listeners from a server.properties; a fresh data directory is not an unclean shutdown."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kio.schema.metadata.v8.request import MetadataRequest

from tests.broker_process import REPO, BrokerProcess
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e



def run_broker(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "broker", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=60)


def files_under(root: Path, skip: Path | None) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if skip is None or skip not in p.parents)


def refused(root: Path, *args: str, busy: Path | None = None) -> str:
    """Run a broker that must refuse to start; return its one line of output. Nothing under root
    may change (but in `busy`, the data dir of a broker that is running)."""
    before = files_under(root, busy)
    result = run_broker(*args)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "Traceback" not in output
    lines = output.splitlines()
    assert len(lines) == 1, output
    assert lines[0].startswith("eosbroker: ")
    assert files_under(root, busy) == before, "a refused start created files"
    return lines[0]


@pytest.mark.parametrize(("args", "cause"), [
    (["--log-level", "LOUD"], "argument --log-level: invalid choice: 'LOUD'"),
    (["--port", "http"], "argument --port: invalid int value"),
    (["--port", "65536"], "Invalid value 65536 for --port"),
    (["--set", "num.partitions=0"], "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
    (["--set", "message.max.bytes=-1"], "configuration message.max.bytes: Value must be at least 0"),
    (["--set", "log.segment.bytes=lots"], "configuration log.segment.bytes: Not a number of type INT"),
    (["--set", "auto.create.topics.enable=yes"], "Expected value to be either true or false"),
    (["--set", "log.retention.hours=0"], "log.retention.ms must be unlimited (-1) or, greater than or equal to 1"),
    (["--set", "log.message.timestamp.type=Wall"], "String must be one of: CreateTime, LogAppendTime"),
    (["--set", "listeners=PLAINTEXT://127.0.0.1:99999"], "must be between 0 and 65535"),
    (["--set", "listeners=SSL://127.0.0.1:0"], "listener SSL"),  # no keystore
    (["--set", "advertised.listeners=PLAINTEXT://0.0.0.0:9092"], "nonroutable meta-address 0.0.0.0"),
    (["--set", "novalue"], "--set expects key=value"),
])
def test_bad_flag_or_property(tmp_path: Path, args: list[str], cause: str) -> None:
    line = refused(tmp_path, "--port", "0", "--data-dir", str(tmp_path / "data"), *args)
    assert cause in line
    assert not (tmp_path / "data").exists()


def test_missing_config_file(tmp_path: Path) -> None:
    line = refused(tmp_path, "--config", str(tmp_path / "server.properties"), "--data-dir", str(tmp_path / "data"))
    assert f"cannot read --config {tmp_path / 'server.properties'}: No such file or directory" in line


def test_data_dir_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a directory")
    line = refused(tmp_path, "--port", "0", "--data-dir", str(tmp_path / "data"))
    assert line == f"eosbroker: data dir {tmp_path / 'data'} is not a directory"
    line = refused(tmp_path, "--port", "0", "--data-dir", str(tmp_path / "data" / "logs"))
    assert line.endswith(f"cannot create data dir {tmp_path / 'data' / 'logs'}: {tmp_path / 'data'} is not a directory")


@contextmanager
def unwritable(directory: Path) -> Iterator[None]:
    """Root ignores permission bits, so as root the directory is made immutable instead."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(0o755)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(directory)], capture_output=True).returncode != 0:
        pytest.skip("running as root without chattr +i: cannot make a directory unwritable")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(directory)], check=True)


def test_unwritable_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with unwritable(data):
        line = refused(tmp_path, "--port", "0", "--data-dir", str(data))
        assert line == f"eosbroker: data dir {data} is not writable"
        line = refused(tmp_path, "--port", "0", "--data-dir", str(data / "new"))
        assert line == f"eosbroker: cannot create data dir {data / 'new'}: {data} is not writable"


def test_port_in_use(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        line = refused(tmp_path, "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(tmp_path / "data"))
    assert line == f"eosbroker: cannot listen on 127.0.0.1:{port}: address already in use"
    assert not (tmp_path / "data").exists()


SMALL_SETTINGS = {"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}


def test_one_broker_per_data_dir(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data", SMALL_SETTINGS).start() as first:
        assert first.proc is not None
        line = refused(tmp_path, "--port", "0", "--data-dir", str(first.data_dir), busy=first.data_dir)
        assert line == (f"eosbroker: data dir {first.data_dir} is in use by another broker (pid {first.proc.pid}); "
                        "each broker needs its own log.dirs")
        assert (first.data_dir / ".lock").read_text() == f"{first.proc.pid}\n"
        with RawClient(first.bootstrap) as client:  # the first broker is untouched and still serving
            assert client.request(metadata_request()).brokers[0].port == first.port
        first.kill()  # the kernel releases the lock with the process: the next start succeeds
        first.start()
        assert first.logged("unclean shutdown")


def test_fresh_data_dir_is_created_and_not_an_unclean_shutdown(tmp_path: Path) -> None:
    assert not (tmp_path / "data").exists()
    with BrokerProcess(tmp_path / "data", SMALL_SETTINGS).start() as proc:
        assert (tmp_path / "data" / ".lock").exists()  # created, as Kafka creates log.dirs
        assert proc.logged("(new data directory)")
        assert not proc.logged("unclean")
        proc.restart(kill=False)
        assert proc.logged("(clean shutdown)")
        assert not proc.logged("unclean")


def metadata_request() -> MetadataRequest:
    return MetadataRequest(topics=(), allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
                           include_topic_authorized_operations=False)


@contextmanager
def broker_from(*args: str) -> Iterator[tuple[int, list[str]]]:
    """A broker started with exactly these arguments; yields its bound port and its log lines."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with subprocess.Popen([sys.executable, "-m", "broker", *args], cwd=REPO, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as proc:
        assert proc.stdout is not None
        lines = []
        try:
            for line in proc.stdout:
                lines.append(line)
                m = re.search(r"listening on [^ ]+:(\d+)", line)
                if m:
                    yield int(m.group(1)), lines
                    break
            else:
                pytest.fail("broker did not start:\n" + "".join(lines))
        finally:
            proc.send_signal(signal.SIGTERM)
            rest = proc.stdout.read()
            assert proc.wait(30) == 0, "".join(lines) + rest
            assert "Traceback" not in rest and " ERROR " not in rest, rest


def test_listeners_from_a_properties_file(tmp_path: Path) -> None:
    """listeners / advertised.listeners in --config are honoured (a stock KRaft server.properties,
    controller listener included); --advertised-host then overrides just the host."""
    config = tmp_path / "server.properties"
    config.write_text("process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
                      "listeners=PLAINTEXT://127.0.0.2:0,CONTROLLER://127.0.0.2:0\n"
                      "advertised.listeners=PLAINTEXT://kafka.example:19092\n"
                      "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
                      f"log.dirs={tmp_path / 'data'}\noffsets.topic.num.partitions=1\n"
                      "transaction.state.log.num.partitions=1\n")
    with broker_from("--config", str(config)) as (port, lines):
        assert f"listening on 127.0.0.2:{port} (advertised as kafka.example:19092)" in lines[-1]
        with RawClient(f"127.0.0.2:{port}") as client:
            (node,) = client.request(metadata_request()).brokers
        assert (node.node_id, node.host, node.port) == (1, "kafka.example", 19092)
    with broker_from("--config", str(config), "--advertised-host", "127.0.0.2") as (port, lines):
        with RawClient(f"127.0.0.2:{port}") as client:
            (node,) = client.request(metadata_request()).brokers
        assert (node.host, node.port) == ("127.0.0.2", 19092)


def test_help_documents_log_level() -> None:
    result = run_broker("--help")
    assert result.returncode == 0
    assert "--log-level {DEBUG,INFO,WARNING,ERROR,CRITICAL}" in result.stdout
