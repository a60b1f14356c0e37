"""Wait until a broker answers its first request: a raw ApiVersions v0 round trip.

Used for both brokers, so start-up time means the same thing on each side:
from spawning the process to the first answered request.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import time

API_VERSIONS = 18
CORRELATION_ID = 0x0BE4C400
CLIENT_ID = b"bench-probe"
# Request header v1: api_key, api_version, correlation_id, client_id (int16 length + bytes).
REQUEST_HEADER = struct.Struct(">hhih")
SIZE = struct.Struct(">i")
POLL_S = 0.005


def api_versions_request() -> bytes:
    body = REQUEST_HEADER.pack(API_VERSIONS, 0, CORRELATION_ID, len(CLIENT_ID)) + CLIENT_ID
    return SIZE.pack(len(body)) + body


def answers(host: str, port: int, timeout: float = 2.0) -> bool:
    """True if the broker returns a response carrying our correlation id."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(api_versions_request())
            head = _recv_exactly(sock, 8)
    except OSError:
        return False
    return head is not None and SIZE.unpack_from(head, 4)[0] == CORRELATION_ID


def _recv_exactly(sock: socket.socket, count: int) -> bytes | None:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def wait_answering(proc: subprocess.Popen, host: str, port: int, timeout: float) -> None:
    """Poll until the broker answers; raise if the process dies or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with code {proc.returncode} before answering")
        if answers(host, port):
            return
        time.sleep(POLL_S)  # polling a port that is not open yet
    raise TimeoutError(f"broker on {host}:{port} did not answer within {timeout:.0f} s")
