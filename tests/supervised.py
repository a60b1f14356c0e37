"""`python -m broker --processes N` as a user runs it, for end-to-end tests: the supervisor and its
broker processes on consecutive loopback ports, their interleaved output followed line by line.
Ready when every node has logged "listening" since its latest start; `check()` fails on an ERROR
line or traceback not declared with expect_log, or on a SIGTERM stop that did not exit 0."""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from broker.embedded import end_process, unexpected_problems

REPO = Path(__file__).resolve().parent.parent
STARTED = re.compile(r"broker process (\d+) of \d+ \(node (\d+), pid (\d+)\) started")
LISTENING = re.compile(r"eosbroker listening on \S+:(\d+) .* node (\d+) of cluster")


def free_ports(count: int) -> int:
    """A first port with `count` free ports from it (checked by binding them), below the kernel's
    ephemeral range, so that the clients' own connections do not take one before the set binds it."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(10_000, low - count)
        socks = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                socks.append(sock)
                sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise RuntimeError(f"no {count} consecutive free ports")


class Supervised:
    def __init__(self, root: Path, count: int, settings: dict[str, str], node_id: int = 1) -> None:
        self.root = root
        self.count = count
        self.settings = settings
        self.node_ids = list(range(node_id, node_id + count))
        self.base_port = free_ports(count)
        self.proc: subprocess.Popen[str] | None = None
        self.lines: list[str] = []
        self.pids: dict[int, int] = {}  # node id -> pid of its latest start
        self.serving: dict[int, int] = {}  # node id -> the pid that logged "listening"
        self.expected: list[re.Pattern[str]] = []
        self.bad_exits: list[str] = []
        self._changed = threading.Condition()
        self._pump: threading.Thread | None = None

    @property
    def bootstrap(self) -> str:
        """The first process's port only: a client reaches the whole set from it."""
        return f"127.0.0.1:{self.base_port}"

    def port_of(self, node_id: int) -> int:
        return self.base_port + node_id - self.node_ids[0]

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "broker", "--processes", str(self.count), "--host", "127.0.0.1",
               "--port", str(self.base_port), "--node-id", str(self.node_ids[0]), "--data-dir", str(self.root / "data")]
        for key, value in self.settings.items():
            cmd += ["--set", f"{key}={value}"]
        return cmd

    def start(self, timeout: float = 90.0) -> Supervised:
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(self.command(), cwd=REPO, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.pids.clear()
        self.serving.clear()
        self._pump = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self._pump.start()
        self.wait_for(lambda: len(self.serving) == self.count, "every process listening", timeout)
        return self

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        with proc.stdout, open(self.root / "supervised.log", "a") as out:
            for line in proc.stdout:
                out.write(line)
                out.flush()
                with self._changed:
                    self.lines.append(line)
                    if (m := STARTED.search(line)) is not None:
                        self.pids[int(m[2])] = int(m[3])
                        self.serving.pop(int(m[2]), None)
                    elif (m := LISTENING.search(line)) is not None:
                        self.serving[int(m[2])] = self.pids[int(m[2])]
                    self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: predicate() or self.exited(), timeout) or not predicate():
                raise AssertionError(f"gave up waiting for {what}:\n" + "".join(self.lines[-40:]))

    def exited(self) -> bool:
        return self.proc is None or self.proc.poll() is not None

    def signal(self, node_id: int, sig: signal.Signals) -> int:
        pid = self.pids[node_id]
        os.kill(pid, sig)
        return pid

    def wait_restarted(self, node_id: int, old_pid: int, timeout: float = 90.0) -> None:
        self.wait_for(lambda: self.serving.get(node_id, old_pid) != old_pid,
                      f"node {node_id} serving again from a new process", timeout)

    def stop(self) -> int | None:
        """SIGTERM to the supervisor; its exit status (0: every process stopped cleanly)."""
        if self.proc is None or self.proc.returncode is not None:
            return self.proc.returncode if self.proc else None
        self.bad_exits += end_process(self.proc, signal.SIGTERM)
        if self._pump is not None:
            self._pump.join(10)
        return self.proc.returncode

    def expect_log(self, pattern: str) -> None:
        self.expected.append(re.compile(pattern))

    def logged(self, pattern: str, since: int = 0) -> list[str]:
        regex = re.compile(pattern)
        return [line for line in self.lines[since:] if regex.search(line)]

    def problems(self) -> list[str]:
        return self.bad_exits + unexpected_problems(self.lines, self.expected)


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
