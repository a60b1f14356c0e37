"""A real network fault proxy for the tests: toxiproxy-server (Shopify's TCP proxy, built from the Go
module proxy by `make toxiproxy` into build/toxiproxy) on a free loopback port, driven through its
HTTP API. A proxy listens on a loopback port and forwards to an upstream; toxics on it add latency
or drop everything both ways (a `timeout` toxic with timeout 0: connections stay open, no byte gets
through, as behind a dead route) until they are removed.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Final

from tests.server_dirs import free_ports, log_tail

__all__ = ("VERSION", "Toxiproxy", "find_toxiproxy")

VERSION: Final = "v2.5.0"  # mk/toxiproxy.mk's TOXIPROXY_VERSION
_BINARY: Final = Path(__file__).resolve().parent.parent / "build" / "toxiproxy" / f"toxiproxy-server-{VERSION}"
_STREAMS: Final = ("upstream", "downstream")


def find_toxiproxy() -> Path | None:
    return _BINARY if _BINARY.exists() else None


class Toxiproxy:
    """`with Toxiproxy() as tp:` starts the server; tp.proxy(name, upstream) forwards a new
    loopback port to upstream ("host:port") and returns that port."""

    def __init__(self) -> None:
        binary = find_toxiproxy()
        if binary is None:
            raise RuntimeError(f"{_BINARY} is missing: run `make toxiproxy` (needs the Go toolchain)")
        self.binary = binary
        self.root = Path(tempfile.mkdtemp(prefix="eos-toxiproxy-"))
        self.port = free_ports(1)[0]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> None:
        with (self.root / "server.log").open("ab") as out:
            self.proc = subprocess.Popen([str(self.binary), "-host", "127.0.0.1", "-port", str(self.port)],
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"toxiproxy-server exited ({self.proc.returncode}):\n{self.log_tail()}")
            try:
                self._call("GET", "/proxies")
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"toxiproxy-server on port {self.port} not ready after {timeout} s:\n{self.log_tail()}")

    def _call(self, method: str, path: str, body: object | None = None) -> object:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                text = response.read()
        except urllib.error.HTTPError as e:  # the API's refusal says why: keep it in the failure
            raise RuntimeError(f"toxiproxy {method} {path}: {e.code} {e.read().decode(errors='replace')}") from e
        return json.loads(text) if text.strip() else None

    def proxy(self, name: str, upstream: str) -> int:
        """A new proxy from a free loopback port to upstream; the port."""
        [port] = free_ports(1)
        self._call("POST", "/proxies", {"name": name, "listen": f"127.0.0.1:{port}", "upstream": upstream,
                                        "enabled": True})
        return port

    def add_latency(self, name: str, latency_ms: int, jitter_ms: int = 0) -> None:
        """Every byte both ways waits latency_ms (+- jitter_ms) more."""
        for stream in _STREAMS:
            self._call("POST", f"/proxies/{name}/toxics", {
                "name": f"latency-{stream}", "type": "latency", "stream": stream, "toxicity": 1.0,
                "attributes": {"latency": latency_ms, "jitter": jitter_ms}})

    def blackhole(self, name: str) -> None:
        """Nothing gets through either way, on open connections and new ones, and nothing is closed."""
        for stream in _STREAMS:
            self._call("POST", f"/proxies/{name}/toxics", {
                "name": f"blackhole-{stream}", "type": "timeout", "stream": stream, "toxicity": 1.0,
                "attributes": {"timeout": 0}})

    def toxics(self, name: str) -> list[str]:
        found = self._call("GET", f"/proxies/{name}/toxics")
        assert isinstance(found, list)
        return sorted(str(t["name"]) for t in found)

    def heal(self, name: str) -> None:
        """Remove every toxic of the proxy: bytes flow again."""
        for toxic in self.toxics(name):
            self._call("DELETE", f"/proxies/{name}/toxics/{toxic}")

    def remove(self, name: str) -> None:
        """Delete the proxy: its listener and every connection through it close."""
        self._call("DELETE", f"/proxies/{name}")

    def log_tail(self, lines: int = 30) -> str:
        return log_tail(self.root / "server.log", lines)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(30)
            self.proc = None

    def __enter__(self) -> Toxiproxy:
        try:
            self.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        for path in self.root.iterdir():
            path.unlink()
        self.root.rmdir()
