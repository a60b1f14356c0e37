"""A real eosbroker process for end-to-end tests: started on 127.0.0.1:0, ready when it logs the
port it listens on, and killable with SIGKILL to test crash recovery.

A broker that misbehaves without the test noticing is a failed test: `check()` (called by the
fixtures at teardown, and by `close()`) raises when the process logged an ERROR or CRITICAL line or a
traceback that the test did not declare with `expect_log(regex)`, or exited non-zero other than by
the SIGKILL of `kill()` (a SIGTERM shutdown must exit 0)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from broker.embedded import LISTENING, end_process, unexpected_problems

REPO = Path(__file__).resolve().parent.parent
# broker/server.py's line for each listener: "listener NAME (PROTOCOL) on host:port, ..."
LISTENER = re.compile(r"listener (\S+) \((\S+)\) on (\S+):(\d+),")


class BrokerProcess:
    def __init__(self, data_dir: Path, settings: dict[str, str] | None = None, port: int = 0) -> None:
        self.data_dir = data_dir
        self.settings = dict(settings or {})
        self.port = port
        self.proc: subprocess.Popen[str] | None = None
        self.log_lines: list[str] = []
        self.log_path = data_dir.parent / f"{data_dir.name}-broker.log"
        self.expected: list[re.Pattern[str]] = []
        # Listener name -> bound port, from the log of the latest start (several listeners).
        self.listener_ports: dict[str, int] = {}
        self._new_line = threading.Condition()
        self.bad_exits: list[str] = []
        self._pump_thread: threading.Thread | None = None
        self._ended = True  # no process running that kill() or stop() should end

    def __enter__(self) -> BrokerProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close(check=exc_info[0] is None)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def bootstrap_of(self, listener: str) -> str:
        """host:port of one listener (the process must have started)."""
        return f"127.0.0.1:{self.listener_ports[listener]}"

    def expect_log(self, pattern: str) -> None:
        """Declare that an ERROR line or traceback matching `pattern` (re.search over the record,
        traceback included) is what this test provokes on purpose."""
        self.expected.append(re.compile(pattern))

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        cmd = [sys.executable, "-m", "broker", "--host", "127.0.0.1", "--port", str(self.port),
               "--data-dir", str(self.data_dir)]
        for key, value in self.settings.items():
            cmd += ["--set", f"{key}={value}"]
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1",
                   PYTHONWARNINGS="always::ResourceWarning")
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self._ended = False
        ready = threading.Event()
        self._pump_thread = threading.Thread(target=self._pump, args=(self.proc, ready), daemon=True)
        self._pump_thread.start()
        if not ready.wait(timeout) or self.proc.poll() is not None:
            self.stop()
            self.bad_exits.clear()  # the RuntimeError says it all
            raise RuntimeError("broker did not start:\n" + "".join(self.log_lines[-50:]))
        return self

    def _pump(self, proc: subprocess.Popen[str], ready: threading.Event) -> None:
        assert proc.stdout is not None
        with proc.stdout, open(self.log_path, "a") as out:
            for line in proc.stdout:
                with self._new_line:
                    self.log_lines.append(line)
                    self._new_line.notify_all()
                out.write(line)
                out.flush()
                if (found := LISTENER.search(line)) is not None:
                    self.listener_ports[found.group(1)] = int(found.group(4))
                m = LISTENING.search(line)
                if m and not ready.is_set():
                    self.port = int(m.group(1))  # keep the port across restarts
                    ready.set()
        ready.set()

    def _end(self, sig: signal.Signals) -> None:
        """Send `sig` to a running process and wait for it and its last output. Note an exit it
        should not have had: anything but 0 after SIGTERM, and any exit it took by itself first."""
        if self.proc is None or self._ended:
            return
        self._ended = True
        self.bad_exits += end_process(self.proc, sig)
        if self._pump_thread is not None:
            self._pump_thread.join(10)

    def kill(self) -> None:
        """SIGKILL: no flush, no clean shutdown marker (the page cache survives, as in a crash)."""
        self._end(signal.SIGKILL)

    def pause(self) -> None:
        """SIGSTOP: the process holds its connections but answers nothing until resume()."""
        assert self.proc is not None and self.proc.poll() is None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> int | None:
        """SIGTERM and wait; returns the exit code (0 for a clean shutdown)."""
        self._end(signal.SIGTERM)
        return self.proc.returncode if self.proc else None

    def restart(self, kill: bool = True) -> BrokerProcess:
        self.kill() if kill else self.stop()
        return self.start()

    def wait_for_log(self, pattern: str, since: int = 0, timeout: float = 15.0) -> str | None:
        """The first line from log_lines[since:] that matches `pattern` (re.search), waiting for
        the broker to write it; None if none came within `timeout` seconds."""
        regex = re.compile(pattern)

        def found() -> str | None:
            return next((line for line in self.log_lines[since:] if regex.search(line)), None)

        with self._new_line:
            self._new_line.wait_for(lambda: found() is not None, timeout)
        return found()

    def logged(self, text: str) -> bool:
        return any(text in line for line in self.log_lines)

    def problems(self) -> list[str]:
        """Unexpected exits, then every ERROR/CRITICAL record or traceback no expect_log() matches."""
        return self.bad_exits + unexpected_problems(self.log_lines, self.expected)

    def check(self) -> None:
        found = self.problems()
        if found:
            raise AssertionError(f"broker at {self.data_dir} misbehaved (log: {self.log_path}); declare "
                                 "what the test provokes with broker.expect_log(regex):\n" + "\n".join(found))

    def close(self, check: bool = True) -> None:
        """Stop (SIGTERM) and, unless told otherwise, check() the whole run."""
        self.stop()
        if check:
            self.check()
