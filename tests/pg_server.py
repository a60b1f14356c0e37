"""A real PostgreSQL server for the cluster tests: initdb into a temporary directory, listen on a
free loopback port, trust authentication for local connections.

The binaries come from Debian's `postgresql` package (the Makefile installs it when missing). The
server refuses to run as root, so under root it runs as the package's `postgres` user. fsync is
off (a test server's data need only survive a crash of the server process, which the page cache
covers) but synchronous_commit stays on: `pg_ctl restart -m immediate` must not lose a commit
that was acknowledged.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.server_dirs import free_ports, log_tail, orphaned_dirs

__all__ = ("PostgresServer", "find_pg_bin")


def find_pg_bin() -> Path | None:
    """The newest installed server's bin directory (Debian keeps it out of PATH)."""
    for path in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name),
                       reverse=True):
        if (Path(path) / "postgres").exists():
            return Path(path)
    found = shutil.which("pg_ctl")
    return Path(found).resolve().parent if found else None


def reap_orphans() -> None:
    """Stop and remove the servers of test runs that died without cleaning up (a killed pytest
    leaves its server running): each server's directory names the process that owns it."""
    for root in orphaned_dirs("eos-pg-"):
        orphan = PostgresServer.__new__(PostgresServer)
        orphan.bin, orphan.root = find_pg_bin() or Path("/nonexistent"), root
        orphan.data, orphan._as_postgres = root / "data", os.geteuid() == 0
        orphan.cleanup()


class PostgresServer:
    @staticmethod
    @contextlib.contextmanager
    def unused_port() -> Iterator[int]:
        """A loopback port nothing listens on (held bound, not listening, while in use)."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            yield int(s.getsockname()[1])

    def __init__(self, root: Path | None = None) -> None:
        bin_dir = find_pg_bin()
        if bin_dir is None:
            raise RuntimeError("PostgreSQL server binaries not found: install Debian's postgresql package")
        self.bin = bin_dir
        self.root = Path(root or tempfile.mkdtemp(prefix="eos-pg-"))
        self.data = self.root / "data"
        self.port = free_ports(1)[0]
        self.user = "postgres"
        self._as_postgres = os.geteuid() == 0

    # -- helpers --------------------------------------------------------------------------------

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin / args[0]), *args[1:]]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
        if check and done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
        return done

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    # -- lifecycle --------------------------------------------------------------------------------

    def init(self) -> None:
        reap_orphans()
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "owner.pid").write_text(str(os.getpid()))
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", self.user, "--auth=trust", "-E", "UTF8",
                  "--no-instructions")
        conf = self.data / "postgresql.conf"
        with conf.open("a") as f:
            f.write(f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                    f"unix_socket_directories = '{self.root}'\nfsync = off\nfull_page_writes = off\n"
                    "max_connections = 300\nshared_buffers = 64MB\nlog_min_messages = warning\n")

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "-t", "60", "start")
        self.wait_ready()

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop", check=False)

    def restart(self, mode: str = "immediate") -> None:
        """pg_ctl restart -m MODE: with immediate, every session is cut off without a checkpoint."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-l", str(self.root / "server.log"), "-w",
                  "-t", "60", "restart")
        self.wait_ready()

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready = self._run("pg_isready", "-h", "127.0.0.1", "-p", str(self.port), check=False)
            if ready.returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError(f"PostgreSQL on port {self.port} not ready after {timeout} s")

    def create_database(self, name: str) -> str:
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, name)
        return self.url(name)

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(self.root / "server.log", lines)

    def cleanup(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def discard(self) -> None:
        """Stop the server and remove its directory without waiting for the removal (cleanup()
        waits): a test session's hundreds of databases are GBs in tens of thousands of files, whose
        removal took 18-57 s at the end of a run here (ext4 mounted with discard, under load). What a
        run that ends first leaves is removed by the next run's reap_orphans."""
        self.stop("immediate")
        # sh exits at once, leaving rm to run on its own
        subprocess.run(["sh", "-c", 'rm -rf -- "$0" >/dev/null 2>&1 &', str(self.root)], check=False)

    def __enter__(self) -> PostgresServer:
        self.init()
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()
