"""Several broker processes from one command (issue 34, docs/processes.md).

One eosbroker process runs one event loop on one core. `python -m broker --processes N` (or
broker.processes=N|auto) starts N of them as N brokers of one cluster, process i with node.id + i
and every listener, advertised listener and metrics port counted up by i (port 0 stays 0: each
binds its own free port), and supervises them:
- SIGTERM or SIGINT stops them all with SIGTERM (each leaves the cluster cleanly) and exits 0 when
  they all stopped cleanly;
- a process that exits by itself is started again: at once if it had run for 10 s, else after
  0.5 s, doubling up to 10 s while it keeps dying that soon; one that fails on its first start (a
  bad setting, a port in use) stops the others and its exit status is the command's;
- a process writes a byte to a pipe the supervisor gave it (HEARTBEAT_FD_ENV) from its event loop
  while it serves; one silent for cluster.lease.ms (paused with SIGSTOP, or its loop stuck) is
  killed with SIGKILL and started again: it is on this machine, and by then the cluster has
  fenced it (its lease lapsed), so the new incarnation takes its partitions at a new epoch.
The supervisor imports no more of the broker than its config, so it stays small.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from .config import BrokerConfig, ConfigError
from .listeners import Listener, default_advertised_host

__all__ = ("HEARTBEAT_FD_ENV", "LOCAL_SET_ENV", "ChildSpec", "child_specs", "heartbeat_fd", "send_heartbeats",
           "supervise",
           "supervise_specs")

log = logging.getLogger("broker.supervisor")
HEARTBEAT_FD_ENV: Final = "EOSBROKER_HEARTBEAT_FD"
# Set (to "index/count") for the processes of a set without cluster.url: they share one data dir
# (broker/cluster/local_set.py); broker/backend.py reads it.
LOCAL_SET_ENV: Final = "EOSBROKER_LOCAL_SET"
_STOP_TIMEOUT_S: Final = 60.0  # then SIGKILL: a process that cannot stop cleanly must not hang the command
_STABLE_S: Final = 10.0  # a process that ran this long before dying is restarted at once again
_BACKOFF_S: Final = (0.5, 10.0)


@dataclasses.dataclass(frozen=True)
class ChildSpec:
    index: int  # 0 .. N-1
    node_id: int
    argv: tuple[str, ...]
    summary: str  # what the start line says about where it listens
    env: tuple[tuple[str, str], ...] = ()  # set in its environment


def child_specs(config: BrokerConfig, args: dict[str, object], count: int) -> list[ChildSpec]:
    """The command line of each of `count` processes: the given one with node.id, the ports and
    (in cluster mode with a data dir) log.dirs made the process's own."""
    return [_spec(config, args, i) for i in range(count)]


def _spec(config: BrokerConfig, args: dict[str, object], i: int) -> ChildSpec:
    node_id = config.node_id + i
    listeners = [dataclasses.replace(li, port=_up(li.port, i)) for li in config.client_listeners]
    argv = [sys.executable, "-m", "broker", "--log-level", str(args.get("log_level") or "INFO")]
    if args.get("config") is not None:
        argv += ["--config", str(args["config"])]
    for item in args.get("set") or ():  # type: ignore[attr-defined]
        argv += ["--set", str(item)]
    local_set = config.cluster_url is None
    if "log.dirs" in config.static_keys:
        # Cluster mode keeps nothing that matters in the data dir, but each broker needs its own;
        # a local set shares it (each process keeps its own node-<id> inside).
        argv += ["--data-dir", config.log_dirs if local_set else str(Path(config.log_dirs) / f"node-{node_id}")]
    argv += ["--node-id", str(node_id), "--set", "listeners=" + ",".join(_bind(li) for li in listeners)]
    advertised = [_advertised(li, config, i) for li in listeners]
    if any(advertised):
        argv += ["--set", "advertised.listeners=" + ",".join(a for a in advertised if a)]
    if config.metrics_port:
        argv += ["--set", f"metrics.port={config.metrics_port + i}"]
    argv += ["--set", "broker.processes=1"]
    where = ", ".join(f"{li.name} on {_host(li.host or '*')}:{li.port or 'any free port'}" for li in listeners)
    env = ((LOCAL_SET_ENV, f"{i}/{config.processes}"),) if local_set else ()
    return ChildSpec(i, node_id, tuple(argv), where, env)


def _up(port: int, i: int) -> int:
    return port + i if port else 0


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _bind(li: Listener) -> str:
    return f"{li.name}://{_host(li.host)}:{li.port}"


def _advertised(li: Listener, config: BrokerConfig, i: int) -> str | None:
    """The listener's advertised.listeners entry for process i (None: it advertises what it binds)."""
    if li.advertised_port is not None:
        return f"{li.name}://{_host(li.advertised_host)}:{li.advertised_port + i}"
    if li.advertised_host == default_advertised_host(li.host):
        return None
    if not li.port:  # advertised.listeners cannot name "the port this process will bind"
        raise ConfigError(f"listener {li.name} advertises host {li.advertised_host} on the port it binds, and "
                          "binds port 0: with broker.processes above 1 give it a port, or an advertised port")
    return f"{li.name}://{_host(li.advertised_host)}:{li.port}"


class _Child:
    """One supervised broker process, restarted until the supervisor stops."""

    def __init__(self, spec: ChildSpec, count: int, lease_s: float, stopping: asyncio.Event) -> None:
        self.spec = spec
        self.count = count
        self.lease_s = lease_s
        self.stopping = stopping
        self.proc: asyncio.subprocess.Process | None = None
        self.started_once = False  # has sent a heartbeat: it got through start-up at least once
        self._beat_fd: int | None = None
        self._last_beat = 0.0
        self._serving = False

    @property
    def name(self) -> str:
        pid = self.proc.pid if self.proc is not None else "-"
        return f"broker process {self.spec.index + 1} of {self.count} (node {self.spec.node_id}, pid {pid})"

    async def run(self) -> int:
        """Run it until the supervisor stops: the exit status of the run the stop ended (0 when
        it was waiting to be started again)."""
        failures = 0
        while True:
            began = asyncio.get_running_loop().time()
            try:
                code = await self._run_once()
            except OSError as exc:  # the interpreter cannot be started at all
                log.error("cannot start %s: %s; stopping the others", self.name, exc)
                self.stopping.set()
                return 1
            if self.stopping.is_set():
                return code
            if not self.started_once:
                log.error("%s failed to start (exit status %d); stopping the others", self.name, code)
                self.stopping.set()
                return code
            ran = asyncio.get_running_loop().time() - began
            failures = 0 if ran > _STABLE_S else failures + 1
            delay = min(_BACKOFF_S[0] * 2 ** max(failures - 1, 0), _BACKOFF_S[1]) if failures else 0.0
            log.warning("%s %s; starting it again%s", self.name, _exit(code),
                        f" in {delay:.1f} s" if delay else "")
            try:
                await asyncio.wait_for(self.stopping.wait(), delay)
                return 0
            except TimeoutError:
                pass

    async def _run_once(self) -> int:
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        env = dict(os.environ, **dict(self.spec.env), **{HEARTBEAT_FD_ENV: str(write_fd)})
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.spec.argv, env=env, pass_fds=(write_fd,), start_new_session=True,
                preexec_fn=_die_with_parent)
        finally:
            os.close(write_fd)
        log.info("%s started: %s", self.name, self.spec.summary)
        if self.stopping.is_set():  # the stop came while it was being started
            self.signal(signal.SIGTERM)
        self._watch_beats(read_fd)
        watchdog = asyncio.get_running_loop().create_task(self._watchdog())
        try:
            return await self.proc.wait()
        finally:
            watchdog.cancel()
            asyncio.get_running_loop().remove_reader(read_fd)
            os.close(read_fd)
            self._serving = False

    def _watch_beats(self, fd: int) -> None:
        loop = asyncio.get_running_loop()

        def beat() -> None:
            try:
                data = os.read(fd, 4096)
            except BlockingIOError:
                return
            if not data:  # the process closed it: it is exiting
                loop.remove_reader(fd)
                return
            self._last_beat = loop.time()
            self._serving = self.started_once = True

        loop.add_reader(fd, beat)

    async def _watchdog(self) -> None:
        """SIGKILL a process that stopped sending heartbeats for a lease (SIGSTOP, a stuck loop)."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(self.lease_s / 4, 1.0))
            silent = loop.time() - self._last_beat
            if self._serving and silent > self.lease_s and not self.stopping.is_set():
                log.warning("%s sent no heartbeat for %.1f s (paused or stuck; its lease has run out): "
                            "killing it", self.name, silent)
                self.signal(signal.SIGKILL)
                return

    def signal(self, sig: signal.Signals) -> None:
        if self.proc is not None and self.proc.returncode is None:
            try:
                self.proc.send_signal(sig)
                if sig == signal.SIGTERM:
                    self.proc.send_signal(signal.SIGCONT)  # a paused process must still hear it
            except ProcessLookupError:
                pass


def _exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the supervisor dies (kill -9 of it leaves no orphans)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the processes outlive a killed supervisor


async def supervise_specs(specs: Sequence[ChildSpec], lease_s: float) -> int:
    """Run the processes until SIGTERM or SIGINT (or a failed first start): the exit status."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    children = [_Child(spec, len(specs), lease_s, stopping) for spec in specs]
    runs = [loop.create_task(child.run()) for child in children]
    await stopping.wait()
    log.info("stopping %d broker processes", len(children))
    for child in children:
        child.signal(signal.SIGTERM)
    done, pending = await asyncio.wait(runs, timeout=_STOP_TIMEOUT_S)
    if pending:
        for child in children:
            if child.proc is not None and child.proc.returncode is None:
                log.warning("%s did not stop within %.0f s: killing it", child.name, _STOP_TIMEOUT_S)
                child.signal(signal.SIGKILL)
        await asyncio.wait(pending)
    return _status(children, [run.result() for run in runs])


def _status(children: Sequence[_Child], codes: Sequence[int]) -> int:
    """0 when every process stopped cleanly; a failed first start's status; else 1."""
    for child, code in zip(children, codes, strict=True):
        if not child.started_once and code > 0:
            return code
    unclean = [(child, code) for child, code in zip(children, codes, strict=True)
               if code not in (0, -signal.SIGTERM)]
    for child, code in unclean:
        log.warning("%s %s while stopping", child.name, _exit(code))
    if not unclean:
        log.info("every broker process stopped cleanly")
    return 1 if unclean else 0


def supervise(config: BrokerConfig, args: dict[str, object], count: int) -> int:
    """Run `count` broker processes until SIGTERM; the command's exit status."""
    specs = child_specs(config, args, count)
    log.info("starting %d broker processes (node ids %d-%d)", count, specs[0].node_id, specs[-1].node_id)
    return asyncio.run(supervise_specs(specs, config.cluster_lease_ms / 1000))


# -- in a supervised process -------------------------------------------------------------------

def heartbeat_fd() -> int | None:
    """The pipe this process was given by its supervisor (taken from the environment, so that the
    processes it starts itself, as the cleaner's worker, do not think they are supervised)."""
    raw = os.environ.pop(HEARTBEAT_FD_ENV, None)
    return int(raw) if raw is not None and raw.isdigit() else None


async def send_heartbeats(fd: int, serving: Callable[[], bool], lease_ms: int) -> None:
    """One byte every lease / 10 (at most a second apart) from the event loop while serving."""
    os.set_blocking(fd, False)
    interval = min(lease_ms / 10_000, 1.0)
    try:
        while True:
            if serving():
                try:
                    os.write(fd, b".")
                except BlockingIOError:
                    pass  # the supervisor is behind on reading: it has heard from us recently
                except BrokenPipeError:
                    return  # the supervisor is gone (it asked for SIGTERM when it dies)
            await asyncio.sleep(interval)
    finally:
        os.close(fd)
