"""Start-up checks that must pass before the broker creates anything on disk: the data directory is
usable (or creatable), and the listening socket is bound. A failure is a StartupError whose message
is the one line the command line prints."""

from __future__ import annotations

import os
import socket
from pathlib import Path

__all__ = ("StartupError", "bind_listener", "check_data_dir")


class StartupError(Exception):
    """The broker cannot start; str(exc) names the cause in one line, exit_code is the status."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _usable(path: Path) -> bool:
    return os.access(path, os.R_OK | os.W_OK | os.X_OK)


def check_data_dir(path: Path) -> None:
    """The data dir is a writable directory, or can be created under a writable one (Kafka creates
    missing log.dirs); nothing is created here."""
    try:
        if path.exists():
            if not path.is_dir():
                raise StartupError(f"data dir {path} is not a directory")
            if not _usable(path):
                raise StartupError(f"data dir {path} is not writable")
            return
        parent = path.absolute().parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise StartupError(f"cannot create data dir {path}: {parent} is not a directory")
        if not _usable(parent):
            raise StartupError(f"cannot create data dir {path}: {parent} is not writable")
    except OSError as exc:
        raise StartupError(f"cannot use data dir {path}: {exc.strerror or exc}") from None


def bind_listener(host: str, port: int, backlog: int) -> socket.socket:
    """A listening socket on host:port ("" = every interface, 0 = an ephemeral port), bound before
    the data dir is touched so that a port in use leaves nothing behind."""
    try:
        if not host:
            if socket.has_dualstack_ipv6():
                return socket.create_server(("", port), family=socket.AF_INET6, backlog=backlog,
                                            dualstack_ipv6=True)
            return socket.create_server(("", port), backlog=backlog)
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                      flags=socket.AI_PASSIVE)[0]
        return socket.create_server(address, family=family, backlog=backlog)
    except OSError as exc:
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        raise StartupError(f"cannot listen on {where}: {_reason(exc)}") from None


def _reason(exc: OSError) -> str:
    # create_server appends "(while attempting to bind ...)" to strerror; the errno says it all.
    if isinstance(exc, socket.gaierror) or not exc.errno:
        reason = exc.strerror or str(exc)
    else:
        reason = os.strerror(exc.errno)
    return reason.lower()
