"""docker-compose.yml and the Dockerfile, read without docker (it cannot run here): the broker's own
argument parser takes the commands they give it, and every client reaches it at the address it
advertises, from the host and from the other services."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from broker.__main__ import load_config, parse_args
from broker.config import BrokerConfig

REPO = Path(__file__).resolve().parent.parent


def compose() -> dict[str, Any]:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def broker_config(args: list[str]) -> BrokerConfig:
    config, unknown = load_config(parse_args(args))
    assert unknown == []
    return config


def bootstrap_of(service: dict[str, Any]) -> str:
    args = service.get("command", [])
    (value,) = [a.partition("=")[2] for a in args if a.startswith("--bootstrap=")]
    return value


def test_host_clients_use_the_published_port() -> None:
    broker = compose()["services"]["broker"]
    config = broker_config(broker["command"])
    assert config.host == "0.0.0.0"  # reachable through the container's interface, where docker forwards
    (published,) = broker["ports"]
    host_ip, host_port, container_port = published.split(":")
    assert int(container_port) == config.port
    # what Metadata returns is the published address on the host, which a host client can use
    assert config.advertised == (host_ip, int(host_port)) == ("127.0.0.1", 9092)


def test_other_services_share_the_brokers_network() -> None:
    """The advertised 127.0.0.1 is the broker only inside its own network namespace."""
    services = compose()["services"]
    host, port = broker_config(services["broker"]["command"]).advertised
    advertised = f"{host}:{port}"
    for name in ("pipeline", "demo"):
        assert services[name]["network_mode"] == "service:broker", name
        assert bootstrap_of(services[name]) == advertised, name
        assert services[name]["depends_on"]["broker"]["condition"] == "service_healthy"


def test_dockerfile_command_parses() -> None:
    text = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    (cmd,) = re.findall(r"^CMD (\[.*\])$", text, re.M)
    config = broker_config(yaml.safe_load(cmd))
    assert (config.host, config.port, config.advertised) == ("0.0.0.0", 9092, ("127.0.0.1", 9092))
    assert str(config.data_dir) == "/data"
