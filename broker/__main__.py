"""Command line: python -m broker / eosbroker."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from .config import ConfigError, build_config, load_properties, parse_sets
from .server import Broker


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="eosbroker", description="Kafka-compatible broker with exactly-once semantics")
    p.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port to listen on, 0 for any free port (default 9092)")
    p.add_argument("--data-dir", help="where partition logs live (log.dirs; default ./data)")
    p.add_argument("--config", type=Path, help="a Kafka-style server.properties file")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a property, e.g. --set num.partitions=6 (repeatable)")
    p.add_argument("--advertised-host", help="host returned in Metadata (for proxies, containers)")
    p.add_argument("--advertised-port", type=int, help="port returned in Metadata")
    p.add_argument("--log-level", default="INFO")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stdout,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        props = load_properties(args.config) if args.config else {}
        props.update(parse_sets(args.set))
        config, unknown = build_config(
            props, host=args.host, port=args.port, log_dirs=args.data_dir,
            advertised_host=args.advertised_host, advertised_port=args.advertised_port,
        )
    except (ConfigError, OSError) as exc:
        print(f"eosbroker: {exc}", file=sys.stderr)
        return 2
    for key in unknown:
        logging.getLogger("broker").warning("unknown configuration key %r is ignored", key)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency; keep running without it
        asyncio.run(Broker(config).serve_forever())
    else:
        uvloop.run(Broker(config).serve_forever())
    return 0


if __name__ == "__main__":
    sys.exit(main())
