"""Command line: python -m broker / eosbroker.

Every start-up failure (a bad flag or property, an unusable data dir, a data dir held by another
broker, a port in use) prints one line, `eosbroker: <cause>`, on stderr and exits with status 2,
before anything is created on disk; in cluster mode a database that cannot be reached exits with 1."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

# Before kio: its phantom types register Hypothesis strategies whenever Hypothesis is importable. A
# broker has no use for them, and the import costs ~0.1 s, or ~1.5 s and a .hypothesis/ directory
# left in the working directory when that holds no Hypothesis cache yet (the embedded broker runs
# in a fresh temporary directory). setdefault: a process that already imported it keeps it. Not
# under pytest: a test that imports this module (tests/test_deployment.py) must not take Hypothesis
# away from the Hypothesis plugin, which imports it lazily.
if "pytest" not in sys.modules:
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]

from .allocator import tune_malloc  # noqa: E402
from .config import BrokerConfig, ConfigError, build_config, load_properties, parse_sets  # noqa: E402
from .startup import StartupError  # noqa: E402
from .supervisor import HEARTBEAT_FD_ENV, heartbeat_fd, send_heartbeats, supervise  # noqa: E402

if TYPE_CHECKING:
    from .server import Broker

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
EXIT_STARTUP_FAILURE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, like every other start-up failure (argparse would print the usage block first).
        self.exit(EXIT_STARTUP_FAILURE, f"{self.prog}: {message} (see --help)\n")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = _Parser(prog="eosbroker", description="Kafka-compatible broker with exactly-once semantics. "
                "--host/--port/--advertised-* override listeners/advertised.listeners when given.")
    p.add_argument("--host", help="address to listen on; '' or 0.0.0.0 for every interface "
                   "(default: from listeners, else 127.0.0.1)")
    p.add_argument("--port", type=int, help="port to listen on, 1-65535, or 0 for any free port "
                   "(default: from listeners, else 9092)")
    p.add_argument("--data-dir", help="where partition logs live (log.dirs; default ./data; created if missing)")
    p.add_argument("--node-id", type=int, help="node.id: unique per broker of a cluster (default 1)")
    p.add_argument("--config", type=Path, help="a Kafka-style server.properties file")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a property, e.g. --set num.partitions=6 (repeatable)")
    p.add_argument("--advertised-host", help="host returned in Metadata (for proxies, containers)")
    p.add_argument("--advertised-port", type=int, help="port returned in Metadata")
    p.add_argument("--processes", metavar="N|auto",
                   help="broker.processes: start N broker processes (node ids and ports counted up from "
                   "the configured ones) and supervise them; auto = one per core (default 1)")
    p.add_argument("--log-level", default="INFO", type=str.upper, choices=LOG_LEVELS,
                   help="log level (default INFO)")
    return p.parse_args(argv)


def load_config(args: argparse.Namespace) -> tuple[BrokerConfig, list[str]]:
    props = load_properties(args.config) if args.config else {}
    props.update(parse_sets(args.set))
    if args.processes is not None:
        props["broker.processes"] = args.processes
    if args.node_id is not None:
        props["node.id"] = str(args.node_id)
    config, unknown = build_config(props, host=args.host, port=args.port, log_dirs=args.data_dir,
                                   advertised_host=args.advertised_host, advertised_port=args.advertised_port)
    from .security.settings import check_overrides

    # listener.name.<listener>.<key>: validated as <key> is; one naming no listener or key is unknown.
    return config, unknown + check_overrides(config)


def _run(main: Coroutine[object, None, None]) -> None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency; keep running without it
        asyncio.run(main)
    else:
        uvloop.run(main)


async def _serve(broker: Broker) -> None:
    """The broker's life; under a supervisor also its heartbeats (broker/supervisor.py)."""
    fd = heartbeat_fd()
    if fd is None:
        return await broker.serve_forever()
    beats = asyncio.get_running_loop().create_task(send_heartbeats(fd, lambda: broker.ready,
                                                                   broker.config.cluster_lease_ms))
    try:
        await broker.serve_forever()
    finally:
        beats.cancel()


def _supervise(config: BrokerConfig, args: argparse.Namespace) -> int:
    try:
        return supervise(config, vars(args), config.processes)
    except ConfigError as exc:  # a setting the processes cannot each be given
        print(f"eosbroker: {exc}", file=sys.stderr)
        return EXIT_STARTUP_FAILURE


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        config, unknown = load_config(args)
    except ConfigError as exc:
        print(f"eosbroker: {exc}", file=sys.stderr)
        return EXIT_STARTUP_FAILURE
    # Supervised processes share the supervisor's output: each line names its node.
    node = f"node{config.node_id} " if HEARTBEAT_FD_ENV in os.environ else ""
    logging.basicConfig(level=args.log_level, stream=sys.stdout,
                        format=f"%(asctime)s %(levelname)s {node}%(name)s: %(message)s")
    for key in unknown:
        logging.getLogger("broker").warning("unknown configuration key %r is ignored", key)
    if config.processes > 1:
        return _supervise(config, args)
    tune_malloc()
    from .server import Broker

    try:
        _run(_serve(Broker(config)))
    except StartupError as exc:
        print(f"eosbroker: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
