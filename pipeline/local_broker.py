"""Start an eosbroker process for the demo: `python -m broker` on a free loopback port, ready once
it logs where it listens."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

_LISTENING = re.compile(r"listening on ([^ ]+):(\d+)")
REPO = Path(__file__).resolve().parent.parent


class LocalBroker:
    def __init__(self, data_dir: Path, log_path: Path) -> None:
        self.data_dir = data_dir
        self.log_path = log_path
        self.bootstrap = ""
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> LocalBroker:
        cmd = [sys.executable, "-m", "broker", "--host", "127.0.0.1", "--port", "0", "--data-dir", str(self.data_dir)]
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
        self._proc = subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        ready = threading.Event()
        threading.Thread(target=self._pump, args=(ready,), daemon=True).start()
        if not ready.wait(60) or not self.bootstrap:
            self.__exit__()
            raise RuntimeError(f"broker did not start; see {self.log_path}")
        return self

    def _pump(self, ready: threading.Event) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        with open(self.log_path, "a") as log:
            for line in self._proc.stdout:
                log.write(line)
                log.flush()
                m = _LISTENING.search(line)
                if m and not ready.is_set():
                    self.bootstrap = f"{m.group(1)}:{m.group(2)}"
                    ready.set()
        ready.set()

    def __exit__(self, *exc: object) -> None:
        if self._proc and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
