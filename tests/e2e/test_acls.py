"""ACLs through Kafka's own kafka-acls (kafka-tools 4.4.0): add, list (all, per resource, per
principal), remove, kept across a kill -9 restart, and refused to a principal that is not allowed
to manage them. Before SASL every client here is User:ANONYMOUS, made a super user to manage ACLs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.broker_process import BrokerProcess
from tests.conftest import BrokerFactory
from tests.e2e.test_startup import refused
from tests.kafka_tools import run_tool

pytestmark = pytest.mark.e2e

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}


def acls(broker: BrokerProcess, *args: str) -> str:
    out = run_tool("kafka-acls", "--bootstrap-server", broker.bootstrap, *args)
    assert out.returncode == 0, f"kafka-acls {args}: {out.stdout}{out.stderr}"
    return out.stdout


def listed(broker: BrokerProcess, *args: str) -> dict[str, set[str]]:
    """kafka-acls --list as {resource pattern: {entries}}."""
    found: dict[str, set[str]] = {}
    resource = ""
    for line in acls(broker, "--list", *args).splitlines():
        if line.startswith("Current ACLs for resource `"):
            resource = line.split("`")[1]
            found[resource] = set()
        elif line.strip().startswith("(principal="):
            found[resource].add(line.strip())
    return found


def entry(principal: str, operation: str, permission: str = "ALLOW", host: str = "*") -> str:
    return f"(principal={principal}, host={host}, operation={operation}, permissionType={permission})"


ORDERS = "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
PAY = "ResourcePattern(resourceType=TOPIC, name=pay, patternType=PREFIXED)"
G1 = "ResourcePattern(resourceType=GROUP, name=g1, patternType=LITERAL)"


def test_kafka_acls_adds_lists_removes_and_the_acls_survive_a_restart(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(AUTHORIZER | {"super.users": "User:ANONYMOUS"})
    acls(broker, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe",
         "--topic", "orders")
    acls(broker, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "pay",
         "--resource-pattern-type", "prefixed")
    acls(broker, "--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.1", "--operation", "All",
         "--group", "g1")
    everything = {ORDERS: {entry("User:alice", "READ"), entry("User:alice", "DESCRIBE")},
                  PAY: {entry("User:alice", "WRITE")}, G1: {entry("User:bob", "ALL", "DENY", "10.0.0.1")}}
    assert listed(broker) == everything
    assert listed(broker, "--topic", "orders") == {ORDERS: everything[ORDERS]}
    assert listed(broker, "--principal", "User:bob") == {G1: everything[G1]}
    # --resource-pattern-type match: every ACL that applies to the topic payments
    assert listed(broker, "--topic", "payments", "--resource-pattern-type", "match") == {PAY: everything[PAY]}

    acls(broker, "--remove", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders",
         "--force")
    everything[ORDERS] = {entry("User:alice", "DESCRIBE")}
    assert listed(broker) == everything

    broker.restart(kill=True)
    assert listed(broker) == everything
    acls(broker, "--remove", "--group", "g1", "--force")
    del everything[G1]
    assert listed(broker) == everything


def test_acl_changes_need_cluster_permissions_and_bad_acls_are_refused(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(AUTHORIZER)
    denied = run_tool("kafka-acls", "--bootstrap-server", broker.bootstrap, "--list")
    assert denied.returncode != 0
    assert "ClusterAuthorizationException" in denied.stdout + denied.stderr, denied.stdout + denied.stderr
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    binding = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    with pytest.raises(KafkaException) as caught:
        admin.create_acls([binding])[binding].result(timeout=30)
    error = caught.value.args[0]
    assert error.code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert error.str() == "Principal User:ANONYMOUS is not authorized to ALTER CLUSTER 'kafka-cluster'"
    broker.stop()

    broker = broker_factory(AUTHORIZER | {"super.users": "User:ANONYMOUS"})
    assert listed(broker) == {}
    token = run_tool("kafka-acls", "--bootstrap-server", broker.bootstrap, "--add", "--allow-principal",
                     "User:alice", "--operation", "Describe", "--delegation-token", "t1")
    assert "no delegation tokens" in token.stdout + token.stderr, token.stdout + token.stderr
    assert listed(broker) == {}


def test_acls_that_do_not_load_stop_the_start(broker_factory: BrokerFactory, tmp_path: Path) -> None:
    """Starting without them would open what they closed: the broker refuses, saying why."""
    broker = broker_factory(AUTHORIZER | {"super.users": "User:ANONYMOUS"})
    acls(broker, "--add", "--deny-principal", "User:mallory", "--operation", "All", "--topic", "*")
    broker.stop()
    stored = tmp_path / "data" / "acls.json"
    assert json.loads(stored.read_text())["acls"][0]["principal"] == "User:mallory"
    stored.write_text('{"version": 1, "acls": [')
    line = refused(tmp_path, "--port", "0", "--data-dir", str(tmp_path / "data"),
                   "--set", f"authorizer.class.name={AUTHORIZER['authorizer.class.name']}")
    assert "cannot load the ACLs" in line and "acls.json is not valid JSON" in line


def test_an_unknown_authorizer_class_is_refused(tmp_path: Path) -> None:
    line = refused(tmp_path, "--port", "0", "--data-dir", str(tmp_path / "data"),
                   "--set", "authorizer.class.name=com.example.MyAuthorizer")
    assert "authorizer.class.name" in line and "StandardAuthorizer" in line
    assert not (tmp_path / "data").exists()
