"""versitygw, the second real S3 server of the tests and the object store of the bench's
eosbroker-os cases: its POSIX backend serves a directory, each bucket a subdirectory. It costs
a third of SeaweedFS's CPU per GB written (issue 33's measurements), having no master, volume
server or filer between the request and the file.

The Go module is built at a pinned version with the Go toolchain on PATH (as tests/franz_go.py
uses it) into the user's cache, once: `python -m tests.versitygw_server` (`make versitygw`, which
`make test` runs) builds it and prints the binary's path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Final

from tests.s3_server import ACCESS_KEY, REGION, SECRET_KEY, LoopbackS3Server

__all__ = ("VERSION", "VersityServer", "build", "find_versitygw")

MODULE: Final = "github.com/versity/versitygw/cmd/versitygw"
VERSION: Final = "v1.8.0"


def install_dir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "eosbroker" / f"versitygw-{VERSION}"


def find_versitygw() -> Path | None:
    binary = install_dir() / "versitygw"
    return binary if binary.exists() else None


def build() -> Path:
    """`go install` of the pinned module into install_dir (nothing if it is there already); the
    binary is moved in once whole, so an interrupted build leaves none."""
    built = find_versitygw()
    if built is not None:
        return built
    go = shutil.which("go")
    if go is None:
        raise FileNotFoundError("the Go toolchain (go) is not on PATH: it builds versitygw for the tests")
    target = install_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="versitygw-", dir=target.parent) as scratch:
        subprocess.run([go, "install", f"{MODULE}@{VERSION}"], cwd=scratch, check=True, timeout=1800,
                       env={**os.environ, "GOBIN": scratch})
        target.mkdir(exist_ok=True)
        os.replace(Path(scratch) / "versitygw", target / "versitygw")
    return target / "versitygw"


class VersityServer(LoopbackS3Server):
    """`versitygw posix` on one loopback port, its buckets under root/data."""

    NAME = "versitygw"
    DIR_PREFIX = "eos-versitygw-"
    PORTS = ("port",)

    @classmethod
    def find_binary(cls) -> Path:
        binary = find_versitygw()
        if binary is None:
            raise RuntimeError(f"versitygw {VERSION} is not built: make versitygw (python -m tests.versitygw_server)")
        return binary

    def command(self) -> list[str]:
        return [str(self.binary), "--port", f"127.0.0.1:{self.ports['port']}", "--access", ACCESS_KEY,
                "--secret", SECRET_KEY, "--region", REGION, "--quiet", "posix", str(self.root / "data")]

    def make_bucket(self, bucket: str) -> None:
        """A bucket of the POSIX backend is a directory under the one it serves."""
        (self.root / "data" / bucket).mkdir(parents=True, exist_ok=True)


if __name__ == "__main__":
    print(build())
