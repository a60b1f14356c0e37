"""A real eosbroker process for end-to-end tests: started on 127.0.0.1:0, ready when it logs the
port it listens on, and killable with SIGKILL to test crash recovery."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_LISTENING = re.compile(r"listening on [^ ]+:(\d+)")


class BrokerProcess:
    def __init__(self, data_dir: Path, settings: dict[str, str] | None = None, port: int = 0) -> None:
        self.data_dir = data_dir
        self.settings = dict(settings or {})
        self.port = port
        self.proc: subprocess.Popen[str] | None = None
        self.log_lines: list[str] = []
        self.log_path = data_dir.parent / f"{data_dir.name}-broker.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        cmd = [sys.executable, "-m", "broker", "--host", "127.0.0.1", "--port", str(self.port),
               "--data-dir", str(self.data_dir)]
        for key, value in self.settings.items():
            cmd += ["--set", f"{key}={value}"]
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        ready = threading.Event()
        threading.Thread(target=self._pump, args=(self.proc, ready), daemon=True).start()
        if not ready.wait(timeout) or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError("broker did not start:\n" + "".join(self.log_lines[-50:]))
        return self

    def _pump(self, proc: subprocess.Popen[str], ready: threading.Event) -> None:
        assert proc.stdout is not None
        with open(self.log_path, "a") as out:
            for line in proc.stdout:
                self.log_lines.append(line)
                out.write(line)
                out.flush()
                m = _LISTENING.search(line)
                if m and not ready.is_set():
                    self.port = int(m.group(1))  # keep the port across restarts
                    ready.set()
        ready.set()

    def kill(self) -> None:
        """SIGKILL: no flush, no clean shutdown marker (the page cache survives, as in a crash)."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> int | None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode if self.proc else None

    def restart(self, kill: bool = True) -> BrokerProcess:
        self.kill() if kill else self.stop()
        return self.start()

    def logged(self, text: str) -> bool:
        return any(text in line for line in self.log_lines)
