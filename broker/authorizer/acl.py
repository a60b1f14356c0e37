"""ACL values in Kafka's terms: resource patterns, access control entries, bindings and the
filters that DescribeAcls and DeleteAcls match them with.

The wire codes of the four enums are Kafka's (AclOperation, ResourceType, PatternType,
AclPermissionType), since clients send and print them. Validation follows Kafka's
AclControlManager.validateNewAcl and AclApis: a binding to store names a concrete resource type,
LITERAL or PREFIXED pattern, concrete operation and ALLOW or DENY, a non-empty resource name
(the CLUSTER resource is only ever `kafka-cluster`) and a principal of the form `Type:name`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Final, TypeVar

from protocol.errors import ErrorCode, KafkaError
from storage.api import AclRecord

__all__ = ("CLUSTER_NAME", "WILDCARD", "WILDCARD_PRINCIPAL", "AclBinding", "AclBindingFilter", "AclOperation",
           "AclPermissionType", "PatternType", "ResourceType", "parse_enum")

# Kafka's CommonResourceNames.CLUSTER_NAME: the one name of the one CLUSTER resource.
CLUSTER_NAME: Final = "kafka-cluster"
# A LITERAL resource name and a host that match every name and every host.
WILDCARD: Final = "*"
# The principal that matches every principal.
WILDCARD_PRINCIPAL: Final = "User:*"
E = TypeVar("E", bound=IntEnum)


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# Delegation tokens (and the USER resource, whose only operations create and describe them) do
# not exist here: an ACL on them could never apply, so creating one is refused rather than kept.
_UNSUPPORTED_RESOURCES: Final = frozenset({ResourceType.DELEGATION_TOKEN, ResourceType.USER})
_CONCRETE_RESOURCES: Final = frozenset(ResourceType) - {ResourceType.UNKNOWN, ResourceType.ANY}


def parse_enum(kind: type[E], code: int) -> E:
    """The enum member of a wire code; an unknown code is UNKNOWN, as Kafka's fromCode has it."""
    try:
        return kind(code)
    except ValueError:
        return kind(0)


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.invalid_request, message)


@dataclass(frozen=True, slots=True, kw_only=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry (Kafka's AclBinding)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def validate(self) -> None:
        """Raises INVALID_REQUEST naming what Kafka would refuse in this binding."""
        if self.resource_type not in _CONCRETE_RESOURCES:
            raise _invalid(f"Invalid resourceType {self.resource_type.name}")
        if self.resource_type in _UNSUPPORTED_RESOURCES:
            raise _invalid(f"ACLs on resource type {self.resource_type.name} are not supported: "
                           "eosbroker has no delegation tokens")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise _invalid(f"Invalid patternType {self.pattern_type.name}")
        if self.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            raise _invalid(f"Invalid operation {self.operation.name}")
        if self.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            raise _invalid(f"Invalid permissionType {self.permission_type.name}")
        if not self.resource_name:
            raise _invalid("Resource name should not be empty")
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise _invalid(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        kind, sep, name = self.principal.partition(":")
        if not sep or not kind or not name:
            raise _invalid(f"Could not parse principal {self.principal!r}: expected Type:name, as in User:alice")

    def to_json(self) -> AclRecord:
        return {"resource_type": self.resource_type.name, "resource_name": self.resource_name,
                "pattern_type": self.pattern_type.name, "principal": self.principal, "host": self.host,
                "operation": self.operation.name, "permission_type": self.permission_type.name}

    @classmethod
    def from_json(cls, d: AclRecord) -> AclBinding:
        return cls(resource_type=ResourceType[d["resource_type"]], resource_name=d["resource_name"],
                   pattern_type=PatternType[d["pattern_type"]], principal=d["principal"], host=d["host"],
                   operation=AclOperation[d["operation"]], permission_type=AclPermissionType[d["permission_type"]])

    def __str__(self) -> str:
        # Kafka's AclBinding.toString, which operators know from kafka-acls and the audit log.
        return (f"(pattern=ResourcePattern(resourceType={self.resource_type.name}, name={self.resource_name}, "
                f"patternType={self.pattern_type.name}), entry=(principal={self.principal}, host={self.host}, "
                f"operation={self.operation.name}, permissionType={self.permission_type.name}))")


@dataclass(frozen=True, slots=True, kw_only=True)
class AclBindingFilter:
    """A DescribeAcls or DeleteAcls filter (Kafka's AclBindingFilter): None and ANY match
    everything; MATCH matches the patterns that would apply to the named resource."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def validate(self) -> None:
        unknown = [what for what, value in (("resource type", self.resource_type), ("pattern type", self.pattern_type),
                                            ("operation", self.operation), ("permission type", self.permission_type))
                   if value == 0]
        if unknown:
            raise _invalid(f"the filter's {', '.join(unknown)} is UNKNOWN")

    def matches(self, acl: AclBinding) -> bool:
        return self._matches_pattern(acl) and self._matches_entry(acl)

    def _matches_pattern(self, acl: AclBinding) -> bool:
        # Kafka's ResourcePatternFilter.matches.
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        exact = self.pattern_type in (PatternType.ANY, acl.pattern_type)
        if not exact and self.pattern_type != PatternType.MATCH:
            return False
        if self.resource_name is None:
            return True
        if exact:
            return self.resource_name == acl.resource_name
        if acl.pattern_type == PatternType.LITERAL:
            return acl.resource_name in (self.resource_name, WILDCARD)
        return self.resource_name.startswith(acl.resource_name)

    def _matches_entry(self, acl: AclBinding) -> bool:
        # Kafka's AccessControlEntryFilter.matches.
        return ((self.principal is None or self.principal == acl.principal)
                and (self.host is None or self.host == acl.host)
                and self.operation in (AclOperation.ANY, acl.operation)
                and self.permission_type in (AclPermissionType.ANY, acl.permission_type))
