"""The authorizer's rules without a broker: Kafka's StandardAuthorizer cases (pattern kinds,
principal and host wildcards, DENY over ALLOW, implied operations, super users, the no-ACL
default, authorizeByResourceType) and the filters of DescribeAcls/DeleteAcls, plus durability."""

from __future__ import annotations

import asyncio
import errno
import json
from pathlib import Path
from typing import Any

import pytest

from broker.authorizer.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from broker.authorizer.standard import StandardAuthorizer
from protocol.errors import ErrorCode, KafkaError
from storage.acl_store import AclFileStore
from storage.fs import FileSystem

Op, Rt, Pt, Perm = AclOperation, ResourceType, PatternType, AclPermissionType
TOPIC, GROUP, TXN, CLUSTER = Rt.TOPIC, Rt.GROUP, Rt.TRANSACTIONAL_ID, Rt.CLUSTER
ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"


def acl(name: str = "orders", *, rtype: Rt = TOPIC, pattern: Pt = Pt.LITERAL, principal: str = ALICE,
        host: str = "*", op: Op = Op.READ, perm: Perm = Perm.ALLOW) -> AclBinding:
    return AclBinding(resource_type=rtype, resource_name=name, pattern_type=pattern, principal=principal,
                      host=host, operation=op, permission_type=perm)


def acl_filter(**fields: Any) -> AclBindingFilter:
    base: dict[str, Any] = {"resource_type": Rt.ANY, "resource_name": None, "pattern_type": Pt.ANY,
                            "principal": None, "host": None, "operation": Op.ANY, "permission_type": Perm.ANY}
    return AclBindingFilter(**(base | fields))


def authorizer(tmp_path: Path, *acls: AclBinding, super_users: frozenset[str] = frozenset(),
               allow_everyone: bool = False) -> StandardAuthorizer:
    auth = StandardAuthorizer(super_users=super_users, allow_everyone_if_no_acl_found=allow_everyone,
                              store=AclFileStore(tmp_path))
    auth.load()
    asyncio.run(auth.create_acls(list(acls)))
    return auth


def can(auth: StandardAuthorizer, op: Op, name: str = "orders", *, rtype: Rt = TOPIC, principal: str = ALICE,
        host: str = HOST) -> bool:
    return auth.authorize(principal, host, op, rtype, name)


def test_deny_by_default_once_enabled(tmp_path: Path) -> None:
    auth = authorizer(tmp_path)
    assert not can(auth, Op.READ)
    assert not can(auth, Op.DESCRIBE, rtype=CLUSTER, name="kafka-cluster")


def test_allow_everyone_if_no_acl_found_only_where_no_acl_applies(tmp_path: Path) -> None:
    auth = authorizer(tmp_path, acl("orders", principal=BOB), allow_everyone=True)
    assert can(auth, Op.WRITE, "payments")  # no ACL on payments: the default allows
    assert not can(auth, Op.READ, "orders")  # an ACL applies (to bob): alice gets no default


def test_literal_prefixed_and_wildcard_patterns(tmp_path: Path) -> None:
    auth = authorizer(tmp_path, acl("orders"), acl("pay", pattern=Pt.PREFIXED), acl("*", rtype=GROUP))
    assert can(auth, Op.READ, "orders")
    assert not can(auth, Op.READ, "orders2")  # a literal is not a prefix
    assert can(auth, Op.READ, "payments") and can(auth, Op.READ, "pay")
    assert not can(auth, Op.READ, "pa")
    assert can(auth, Op.READ, "any-group", rtype=GROUP)
    assert not can(auth, Op.READ, "any-topic")  # the `*` ACL is a GROUP one


def test_a_literal_star_is_not_a_prefix(tmp_path: Path) -> None:
    auth = authorizer(tmp_path, acl("*", pattern=Pt.PREFIXED))
    assert not can(auth, Op.READ, "orders")
    assert can(auth, Op.READ, "*orders")


def test_principal_and_host_matching(tmp_path: Path) -> None:
    auth = authorizer(tmp_path, acl("orders", principal="User:*", op=Op.READ),
                      acl("orders", host="10.0.0.2", op=Op.WRITE))
    assert can(auth, Op.READ, principal=BOB)
    assert not can(auth, Op.WRITE)  # from 10.0.0.1, the ACL names 10.0.0.2
    assert can(auth, Op.WRITE, host="10.0.0.2")
    assert can(auth, Op.READ, principal="Group:x")  # Kafka: User:* stands for every principal
    assert not can(auth, Op.WRITE, principal="Group:alice", host="10.0.0.2")  # the type is part of it


@pytest.mark.parametrize(("acl_host", "client", "matches"), [
    ("::1", "::1", True), ("::1", "0:0:0:0:0:0:0:1", True), ("0:0:0:0:0:0:0:1", "::1", True),
    ("[::1]", "::1", True), ("fe80::1", "FE80:0:0::1", True), ("::2", "::1", False),
    ("10.0.0.1", "::ffff:10.0.0.1", True),  # an IPv4 client of a dual-stack listener, as Java sees it
    ("::ffff:10.0.0.1", "10.0.0.1", True), ("10.0.0.1", "::ffff:10.0.0.2", False),
    ("10.0.0.1", "10.0.0.01", False),  # not an address: compared as written, so it matches nothing
    ("localhost", "127.0.0.1", False),  # nor is a host name resolved (Kafka does not either)
])
def test_hosts_compare_as_addresses(tmp_path: Path, acl_host: str, client: str, matches: bool) -> None:
    auth = authorizer(tmp_path, acl("orders", host=acl_host, op=Op.WRITE),
                      acl("orders", host=acl_host, op=Op.READ, perm=Perm.DENY, principal="User:*"),
                      acl("orders", op=Op.READ))
    assert can(auth, Op.WRITE, host=client) is matches
    assert can(auth, Op.READ, host=client) is not matches  # a DENY for the host, too
    assert auth.authorize_by_resource_type(ALICE, client, Op.WRITE, Rt.TOPIC) is matches


def test_deny_wins_over_allow_wherever_it_comes_from(tmp_path: Path) -> None:
    auth = authorizer(tmp_path, acl("orders", op=Op.ALL), acl("ord", pattern=Pt.PREFIXED, perm=Perm.DENY,
                                                               op=Op.WRITE, principal="User:*"))
    assert can(auth, Op.READ)
    assert not can(auth, Op.WRITE)
    asyncio.run(auth.create_acls([acl("orders", host=HOST, op=Op.ALL, perm=Perm.DENY)]))
    assert not can(auth, Op.READ)
    assert can(auth, Op.READ, host="10.0.0.9")


@pytest.mark.parametrize(("granted", "asked", "allowed"), [
    (Op.READ, Op.DESCRIBE, True), (Op.WRITE, Op.DESCRIBE, True), (Op.DELETE, Op.DESCRIBE, True),
    (Op.ALTER, Op.DESCRIBE, True), (Op.CREATE, Op.DESCRIBE, False), (Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, True),
    (Op.ALTER_CONFIGS, Op.DESCRIBE, False), (Op.DESCRIBE, Op.READ, False), (Op.WRITE, Op.READ, False),
    (Op.ALL, Op.IDEMPOTENT_WRITE, True), (Op.READ, Op.READ, True),
])
def test_implied_operations(tmp_path: Path, granted: Op, asked: Op, allowed: bool) -> None:
    assert can(authorizer(tmp_path, acl(op=granted)), asked) is allowed


def test_implication_does_not_widen_a_deny(tmp_path: Path) -> None:
    # Kafka: a DENY for READ does not deny DESCRIBE.
    auth = authorizer(tmp_path, acl(op=Op.DESCRIBE), acl(op=Op.READ, perm=Perm.DENY))
    assert can(auth, Op.DESCRIBE)
    assert not can(auth, Op.READ)


def test_super_users_pass_even_a_deny(tmp_path: Path) -> None:
    auth = authorizer(tmp_path, acl(op=Op.ALL, perm=Perm.DENY, principal="User:*"),
                      super_users=frozenset({"User:admin"}))
    assert can(auth, Op.DELETE, principal="User:admin")
    assert not can(auth, Op.DELETE)


@pytest.mark.parametrize(("acls", "allowed"), [
    ((), False),
    ((acl("orders", op=Op.WRITE),), True),
    ((acl("orders", op=Op.READ),), False),
    ((acl("*", op=Op.WRITE),), True),
    ((acl("*", op=Op.WRITE), acl("*", op=Op.WRITE, perm=Perm.DENY)), False),
    ((acl("orders", op=Op.WRITE), acl("orders", op=Op.WRITE, perm=Perm.DENY)), False),
    ((acl("orders", op=Op.WRITE), acl("or", pattern=Pt.PREFIXED, op=Op.WRITE, perm=Perm.DENY)), False),
    ((acl("or", pattern=Pt.PREFIXED, op=Op.WRITE), acl("orders", op=Op.WRITE, perm=Perm.DENY)), True),
    ((acl("orders", op=Op.WRITE, principal=BOB),), False),
])
def test_authorize_by_resource_type(tmp_path: Path, acls: tuple[AclBinding, ...], allowed: bool) -> None:
    """Kafka's authorizeByResourceType, which InitProducerId without a transactional id uses."""
    auth = authorizer(tmp_path, *acls)
    assert auth.authorize_by_resource_type(ALICE, HOST, Op.WRITE, TOPIC) is allowed


def test_filters_match_as_kafkas(tmp_path: Path) -> None:
    a, b, c, d = (acl("orders"), acl("ord", pattern=Pt.PREFIXED, principal=BOB), acl("*", op=Op.WRITE),
                  acl("g", rtype=GROUP))
    auth = authorizer(tmp_path, a, b, c, d)
    assert auth.acls(acl_filter()) == [a, b, c, d]
    assert auth.acls(acl_filter(resource_type=TOPIC, resource_name="orders")) == [a]  # ANY: exact names
    assert auth.acls(acl_filter(resource_name="orders", pattern_type=Pt.MATCH)) == [a, b, c]
    assert auth.acls(acl_filter(pattern_type=Pt.PREFIXED)) == [b]
    assert auth.acls(acl_filter(principal=BOB)) == [b]
    assert auth.acls(acl_filter(operation=Op.WRITE, permission_type=Perm.ALLOW)) == [c]
    assert auth.acls(acl_filter(host="10.0.0.1")) == []


def test_create_is_idempotent_and_delete_reports_per_filter(tmp_path: Path) -> None:
    auth = authorizer(tmp_path, acl("orders"), acl("orders"), acl("payments"))
    assert len(auth.acls(acl_filter())) == 2
    removed = asyncio.run(auth.delete_acls([acl_filter(resource_name="orders"), acl_filter(resource_type=TOPIC)]))
    assert removed == [[acl("orders")], [acl("orders"), acl("payments")]]
    assert auth.acls(acl_filter()) == []


def test_acls_survive_a_restart_and_a_bad_file_stops_the_load(tmp_path: Path) -> None:
    authorizer(tmp_path, acl("orders"), acl("pay", pattern=Pt.PREFIXED, perm=Perm.DENY))
    again = authorizer(tmp_path)
    assert again.acls(acl_filter()) == [acl("orders"), acl("pay", pattern=Pt.PREFIXED, perm=Perm.DENY)]
    (tmp_path / "acls.json").write_text(json.dumps({"version": 1, "acls": [{"resource_type": "TOPIC"}]}))
    with pytest.raises(ValueError, match="unreadable ACL record"):
        authorizer(tmp_path)
    (tmp_path / "acls.json").write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        authorizer(tmp_path)


class FullDisk(FileSystem):
    def write(self, fd: int, data: bytes | bytearray | memoryview) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_write_changes_nothing(tmp_path: Path) -> None:
    authorizer(tmp_path, acl("orders"))
    auth = StandardAuthorizer(super_users=frozenset(), allow_everyone_if_no_acl_found=False,
                              store=AclFileStore(tmp_path, FullDisk()))
    auth.load()
    with pytest.raises(KafkaError, match="No space left") as caught:
        asyncio.run(auth.create_acls([acl("payments")]))
    assert caught.value.code == ErrorCode.kafka_storage_error
    assert auth.acls(acl_filter()) == [acl("orders")]
    assert authorizer(tmp_path).acls(acl_filter()) == [acl("orders")]


@pytest.mark.parametrize(("binding", "fragment"), [
    (acl(rtype=Rt.ANY), "Invalid resourceType ANY"),
    (acl(rtype=Rt.DELEGATION_TOKEN), "no delegation tokens"),
    (acl(pattern=Pt.MATCH), "Invalid patternType MATCH"),
    (acl(op=Op.ANY), "Invalid operation ANY"),
    (acl(perm=Perm.ANY), "Invalid permissionType ANY"),
    (acl(""), "should not be empty"),
    (acl("my-cluster", rtype=CLUSTER), "only valid name for the CLUSTER resource is kafka-cluster"),
    (acl(principal="alice"), "Could not parse principal"),
])
def test_invalid_bindings_are_refused_with_why(binding: AclBinding, fragment: str) -> None:
    with pytest.raises(KafkaError, match=fragment) as caught:
        binding.validate()
    assert caught.value.code == ErrorCode.invalid_request
