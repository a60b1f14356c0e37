"""docker-compose.yml and the Dockerfile, read without docker (it cannot run here): the broker's own
argument parser takes the commands they give it, and every client reaches it at the address it
advertises, from the host and from the other services."""

from __future__ import annotations

import json
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


BROKERS = ("broker-1", "broker-2", "broker-3")


def test_host_clients_use_the_published_ports() -> None:
    """Each broker binds every interface of the shared namespace and advertises the address the
    postgres service (the namespace's owner) publishes for it on the host."""
    services = compose()["services"]
    published = {}
    for entry in services["postgres"]["ports"]:
        host_ip, host_port, container_port = entry.split(":")
        published[int(container_port)] = (host_ip, int(host_port))
    seen = set()
    for name in BROKERS:
        config = broker_config(services[name]["command"])
        assert config.host == "0.0.0.0", name
        assert config.advertised == published[config.port], name
        seen.add(config.node_id)
    assert seen == {1, 2, 3}


def test_brokers_form_one_cluster_on_the_postgres_service() -> None:
    services = compose()["services"]
    env = services["postgres"]["environment"]
    expected = f"postgresql://{env['POSTGRES_USER']}@127.0.0.1:5432/{env['POSTGRES_DB']}"
    for name in BROKERS:
        assert broker_config(services[name]["command"]).cluster_url == expected, name
        assert services[name]["network_mode"] == "service:postgres", name
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy", name


def test_other_services_share_the_namespace_and_bootstrap_from_every_broker() -> None:
    """The advertised 127.0.0.1 addresses are the brokers only inside the shared namespace."""
    services = compose()["services"]
    addresses = [broker_config(services[name]["command"]).advertised for name in BROKERS]
    advertised = {f"{host}:{port}" for host, port in addresses}
    for name in ("pipeline", "demo"):
        assert services[name]["network_mode"] == "service:postgres", name
        assert set(bootstrap_of(services[name]).split(",")) == advertised, name
        assert services[name]["depends_on"]["broker-1"]["condition"] == "service_healthy", name


def test_dockerfile_command_parses() -> None:
    text = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    (cmd,) = re.findall(r"^CMD (\[.*\])$", text, re.M)
    config = broker_config(yaml.safe_load(cmd))
    assert (config.host, config.port, config.advertised) == ("0.0.0.0", 9092, ("127.0.0.1", 9092))
    assert str(config.data_dir) == "/data"


def objects_flags() -> dict[str, str]:
    """The objects service's `weed server` flags, name -> value ("" for a bare flag)."""
    command = compose()["services"]["objects"]["command"]
    assert command[0] == "server"
    return {name.lstrip("-"): value for name, _, value in (arg.partition("=") for arg in command[1:])}


def test_object_store_service_serves_s3_inside_the_namespace_only() -> None:
    """SeaweedFS with its filer and S3 gateway, bound to loopback in the shared namespace (its port
    is not published), its data on a volume, healthy once the S3 port answers."""
    doc = compose()
    service, flags = doc["services"]["objects"], objects_flags()
    assert service["network_mode"] == "service:postgres"
    assert (flags["ip"], flags["ip.bind"]) == ("127.0.0.1", "127.0.0.1")
    assert {"filer", "s3"} <= set(flags)
    published = {entry.split(":")[2] for entry in doc["services"]["postgres"]["ports"]}
    assert flags["s3.port"] not in published
    (volume,) = service["volumes"]
    name, _, path = volume.partition(":")
    assert path == flags["dir"] and name in doc["volumes"]
    (config,) = service["configs"]
    assert config["target"] == flags["s3.config"] and config["source"] in doc["configs"]
    assert f"http://127.0.0.1:{flags['s3.port']}/" in " ".join(service["healthcheck"]["test"])


def test_brokers_store_records_in_the_object_service_with_its_identity() -> None:
    """Every broker points cluster.object.store.* at the objects service, waits for it to be healthy,
    and has in its environment an identity the service's config allows to read and write, with
    the cloud metadata lookup off."""
    doc = compose()
    services, flags = doc["services"], objects_flags()
    config = json.loads(doc["configs"][services["objects"]["configs"][0]["source"]]["content"])
    allowed = {(cred["accessKey"], cred["secretKey"]): set(identity["actions"])
               for identity in config["identities"] for cred in identity["credentials"]}
    for name in BROKERS:
        broker = broker_config(services[name]["command"])
        assert broker.cluster_object_store_url is not None, name
        assert broker.cluster_object_store_url.startswith("s3://"), name
        assert broker.cluster_object_store_endpoint == f"http://127.0.0.1:{flags['s3.port']}", name
        assert broker.cluster_object_store_region, name
        env = services[name]["environment"]
        assert {"Read", "Write", "List"} <= allowed[(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"])]
        assert (env["AWS_EC2_METADATA_DISABLED"], env["AWS_ALLOW_HTTP"]) == ("true", "true"), name
        assert services[name]["depends_on"]["objects"]["condition"] == "service_healthy", name
